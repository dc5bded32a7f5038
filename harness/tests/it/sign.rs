//! `hookbench sign` prints the Standard Webhooks headers, checked with the standard's vectors.

use std::io::Write;

use clap::Parser;
use hookbench::cli::{Cli, run};

fn sign(secret: &str, id: &str, ts: &str, body: &str) -> anyhow::Result<String> {
    let mut file = tempfile::NamedTempFile::new()?;
    file.write_all(body.as_bytes())?;
    let path = file.path().to_str().expect("utf-8 path").to_string();
    let cli =
        Cli::try_parse_from(["hookbench", "sign", "--secret", secret, "--id", id, "--timestamp", ts, &path])?;
    let mut out = Vec::new();
    run(cli, &mut out)?;
    Ok(String::from_utf8(out)?)
}

#[test]
fn prints_the_first_vectors_headers() {
    let out = sign(
        "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD",
        "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk",
        "1649367553",
        r#"{"email":"test@example.com","username":"test_user"}"#,
    )
    .expect("signs");
    assert_eq!(
        out,
        "webhook-id: msg_27UH4WbU6Z5A5EzD8u03UvzRbpk\n\
         webhook-timestamp: 1649367553\n\
         webhook-signature: v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw=\n"
    );
}

#[test]
fn prints_the_second_vectors_signature() {
    let out = sign(
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "msg_p5jXN8AQM9LWM0D4loKWxJek",
        "1614265330",
        r#"{"test": 2432232314}"#,
    )
    .expect("signs");
    assert!(out.ends_with("webhook-signature: v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=\n"), "{out}");
}

#[test]
fn refuses_a_secret_without_the_prefix() {
    let err = sign("C2FVsBQIhrsc", "msg_1", "1", "{}").expect_err("refused");
    assert!(format!("{err:#}").contains("`whsec_` followed by base64"), "{err:#}");
}

#[test]
fn refuses_a_missing_body_file() {
    let cli = Cli::try_parse_from([
        "hookbench",
        "sign",
        "--secret",
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "--id",
        "msg_1",
        "/nonexistent/body.json",
    ])
    .expect("parses");
    let err = run(cli, &mut Vec::new()).expect_err("refused");
    assert!(format!("{err:#}").contains("reading the body from /nonexistent/body.json"), "{err:#}");
}
