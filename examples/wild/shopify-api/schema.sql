-- What SQL counts: one row per call of the example's webhook-processing code.
CREATE TABLE IF NOT EXISTS handler_calls (
  n bigserial PRIMARY KEY,
  webhook_id text NOT NULL,
  topic text NOT NULL,
  at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS handler_calls_webhook ON handler_calls (webhook_id);
