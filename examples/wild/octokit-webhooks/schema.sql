-- What SQL counts: one row per call of the example's onAny handler.
CREATE TABLE IF NOT EXISTS handler_calls (
  n bigserial PRIMARY KEY,
  delivery_id text NOT NULL,
  event_name text NOT NULL,
  at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS handler_calls_delivery ON handler_calls (delivery_id);
