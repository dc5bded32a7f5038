//! Before any check: one signed delivery of a fresh credit (and, when it is refused, the same body
//! signed with a secret the receiver never had) tells a receiver the audit cannot judge as told
//! from one that fails. Each of these stops the audit as could-not-run (exit 2) with the fix: a
//! redirect (give the URL it names: often the trailing slash), a 404 or 405 (the path), a
//! correctly signed delivery answered exactly as the wrongly signed one is (`--secret`,
//! `--signing`), a correctly signed delivery refused otherwise (its body: `--payload`). A 2xx, a
//! 5xx or no answer goes on: the checks judge the receiver. (A query of the wrong shape is refused
//! before this, when the observer connects.) An unsigned delivery would not tell these apart: a
//! receiver may answer a missing signature and a malformed body with the same 400.

use super::ctx::Ctx;
use crate::wire::Scheme;

/// What the preflight found wrong, with the fix.
pub type Fix = String;

/// The preflight: `Err` names what to fix before the receiver can be audited.
pub async fn preflight(ctx: &Ctx, url: &str) -> Result<(), Fix> {
    let f = ctx.credit("pre", 0, ctx.account(), 100);
    let signed = ctx.deliver(&f, "preflight, signed").await;
    let Some(status) = signed.status else { return Ok(()) };
    let scheme = ctx.wire.signer.scheme();
    match status {
        300..=399 => Err(redirect(url, ctx.probe.path(), status, signed.location.as_deref())),
        404 | 405 => Err(format!(
            "the receiver answered {status} at {} to a signed delivery: nothing takes webhooks there; check the URL's path",
            ctx.probe.path()
        )),
        400 | 401 | 403 | 422 if scheme.signs() => {
            let stranger = ctx.wire.signed_by(ctx.wire.signer.stranger());
            let wrong = ctx.deliver_over(&stranger, &f, "preflight, signed with a secret it never had").await;
            Err(refused(scheme, (status, &signed.said), (wrong.status, &wrong.said)))
        }
        401 | 403 => Err(format!(
            "the receiver answered {status} to an unsigned delivery (--signing none): give --signing and --secret as its provider signs"
        )),
        400 | 422 => Err(format!(
            "the receiver refused the body with {status}{}: check --payload (the body's shape)",
            quoted(&signed.said)
        )),
        _ => Ok(()),
    }
}

fn quoted(said: &str) -> String {
    if said.is_empty() { String::new() } else { format!(" (\"{said}\")") }
}

/// The fix for a redirect: the URL it names, and the trailing slash when that is all it adds.
fn redirect(url: &str, path: &str, status: u16, location: Option<&str>) -> Fix {
    let Some(to) = location else {
        return format!(
            "the receiver answered {status}, a redirect without a Location, to a signed delivery: give the URL it serves webhooks at"
        );
    };
    let slash = !url.ends_with('/') && (to == format!("{url}/") || to == format!("{path}/"));
    let hint = if slash { ": add the trailing slash" } else { "" };
    format!(
        "the receiver answered {status} redirecting to {to} for a signed delivery (a provider does not follow redirects){hint}; audit {to}"
    )
}

/// The fix for a correctly signed delivery refused with `signed` (status, words): the secret or
/// scheme when one signed with a secret the receiver never had is answered exactly so, else the
/// body.
fn refused(scheme: Scheme, signed: (u16, &str), wrong: (Option<u16>, &str)) -> Fix {
    let (status, said) = signed;
    if wrong.0 == Some(status) && wrong.1 == said {
        return format!(
            "the receiver answers a correctly signed delivery as it answers one signed with a secret it never had ({status}{}): check --secret (the receiver's signing secret, as the provider shows it) and --signing {}",
            quoted(said),
            scheme.as_str()
        );
    }
    format!(
        "the receiver refused a correctly signed delivery with {status}{}, unlike one signed with a secret it never had ({}{}): the signature passed and the body was refused; check --payload (the body's shape; a template names the fields your handler reads)",
        quoted(said),
        wrong.0.map_or_else(|| "no answer".to_string(), |u| u.to_string()),
        quoted(wrong.1)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redirect_to_the_trailing_slash_says_to_add_it() {
        let fix = redirect("http://h:1/webhooks", "/webhooks", 301, Some("http://h:1/webhooks/"));
        assert!(fix.ends_with("add the trailing slash; audit http://h:1/webhooks/"), "{fix}");
        let fix = redirect("http://h:1/webhooks", "/webhooks", 308, Some("/webhooks/"));
        assert!(fix.contains("add the trailing slash"), "{fix}");
        let fix = redirect("http://h:1/webhooks", "/webhooks", 302, Some("/login"));
        assert!(!fix.contains("trailing slash") && fix.contains("audit /login"), "{fix}");
    }

    #[test]
    fn a_refusal_like_a_wrong_secrets_names_the_secret_and_any_other_the_payload() {
        let fix = refused(Scheme::Stripe, (400, "No signatures found"), (Some(400), "No signatures found"));
        assert!(fix.contains("--secret") && fix.contains("--signing stripe"), "{fix}");
        let fix =
            refused(Scheme::StandardWebhooks, (422, "missing field customer"), (Some(401), "bad signature"));
        assert!(fix.contains("--payload") && fix.contains("missing field customer"), "{fix}");
        // The same status, other words: the example receiver's 400 for a malformed body and for a
        // signature that matches no secret.
        let fix =
            refused(Scheme::StandardWebhooks, (400, "malformed event"), (Some(400), "no matching signature"));
        assert!(fix.contains("--payload"), "{fix}");
    }
}
