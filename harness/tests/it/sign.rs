//! `hookbench sign` prints a provider's headers (checked with the Standard Webhooks vectors and
//! Slack's documented example); `hookbench keys` makes the asymmetric schemes' pairs.

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

/// `hookbench` as a user runs it: its exit code, standard output and standard error.
fn hookbench(args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_hookbench")).args(args).output().expect("runs");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

/// A pair `hookbench keys` makes: (the private key for --secret, the public key).
fn keys(scheme: &str) -> (String, String) {
    let (code, out, err) = hookbench(&["keys", scheme]);
    assert_eq!(code, 0, "{err}");
    let field = |name: &str| out.lines().find_map(|l| l.strip_prefix(name)).expect(name).to_string();
    (field("secret: "), field("public-key: "))
}

/// `keys` makes pairs whose public half `sign --public-key` gives back in the dashboard's form:
/// SendGrid's base64 DER SubjectPublicKeyInfo (91 bytes for P-256), Discord's 64 hex digits.
#[test]
fn keys_make_pairs_and_sign_prints_their_public_halves() {
    let (secret, public) = keys("sendgrid");
    let (code, out, err) = hookbench(&["sign", "--signing", "sendgrid", "--secret", &secret, "--public-key"]);
    assert_eq!((code, out.trim()), (0, public.as_str()), "{err}");
    use base64::Engine as _;
    let der = base64::engine::general_purpose::STANDARD.decode(&public).expect("base64");
    assert_eq!(der.len(), 91);

    let (secret, public) = keys("discord");
    let (code, out, _) = hookbench(&["sign", "--signing", "discord", "--secret", &secret, "--public-key"]);
    assert_eq!((code, out.trim()), (0, public.as_str()));
    assert!(public.len() == 64 && public.bytes().all(|b| b.is_ascii_hexdigit()), "{public}");

    let (code, _, err) = hookbench(&["keys", "slack"]);
    assert_eq!(code, 2, "a shared secret has no pair: {err}");
}

/// A key of the wrong kind is exit 2 naming --secret; so is a URL-signing scheme without --url.
#[test]
fn a_key_of_the_wrong_kind_or_a_missing_url_is_a_usage_error() {
    let (ed25519, _) = keys("discord");
    let (code, _, err) = hookbench(&[
        "sign",
        "--signing",
        "sendgrid",
        "--secret",
        &ed25519,
        "--id",
        "e1",
        "--timestamp",
        "1",
        "-",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--secret") && err.contains("ECDSA P-256"), "{err}");
    let (code, _, err) = hookbench(&[
        "sign",
        "--signing",
        "discord",
        "--secret",
        "not-a-key",
        "--id",
        "e1",
        "--timestamp",
        "1",
        "-",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--secret") && err.contains("Ed25519"), "{err}");
    let (code, _, err) =
        hookbench(&["sign", "--signing", "twilio", "--secret", "t", "--id", "e1", "--timestamp", "1", "-"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--url"), "{err}");
}

/// Slack's documented example (api.slack.com/authentication/verifying-requests-from-slack): the
/// secret, timestamp and body it gives, and the signature it says they make.
#[test]
fn slack_signs_its_documented_example() {
    let body = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
    let mut file = tempfile::NamedTempFile::new().expect("tempfile");
    file.write_all(body.as_bytes()).expect("write");
    let path = file.path().to_str().expect("utf-8").to_string();
    let (code, out, err) = hookbench(&[
        "sign",
        "--signing",
        "slack",
        "--secret",
        "8f742231b10e8888abcd99yyyzzz85a5",
        "--id",
        "-",
        "--timestamp",
        "1531420618",
        &path,
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(
            "x-slack-signature: v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503\n"
        ),
        "{out}"
    );
}
