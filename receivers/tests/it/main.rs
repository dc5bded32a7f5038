//! The receivers through their router and their HTTP transport, on real Postgres (one server for
//! this binary: `DATABASE_URL`, or a container) and real SQLite (a file per test): every design,
//! bad input, what a hostile probe found, the transport's bounds, a database that goes away, a
//! write dropped half-way.
//! Support lives in the `testkit` crate, shared with hookbench's own tests.

mod bad_input;
mod cancelled;
mod database;
mod designs;
mod hardening;
mod transport;
