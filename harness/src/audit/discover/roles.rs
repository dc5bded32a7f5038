//! What each table a credit changed is, decided by what its changed rows hold, never by how
//! often they changed (a safe receiver's duplicate changes neither its dedupe table nor its effect
//! tables, so by counts the two look alike):
//!
//! - an **effect**: a changed row carries the credit's account (and perhaps its amount), so the
//!   effect itself shows there: a balance (one row per account) or effect rows (a row per apply);
//!   it gets a balance or count query, or an applied query when its rows also carry the event id;
//! - **bookkeeping**: a changed row carries the event id and nothing of the effect (a dedupe
//!   table): one row per event however often the effect ran, never evidence;
//! - a **log**: changed by a delivery whatever its outcome (one signed with a secret the receiver
//!   never had), never evidence;
//! - **unrelated**: changed, holding nothing of the credit.
//!
//! Pure: what the database showed goes in, the roles and the proposed queries come out.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::judge::aggregate::grouped;
use crate::observe::changes::{Changed, Table, Values, identifier};

/// The credit discover sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credit {
    /// Its event id.
    pub id: String,
    /// Its account.
    pub account: i64,
    /// Its amount.
    pub amount: i64,
}

/// A column that holds the credit's account: as a number, or as text with a prefix (`cus_42`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountColumn {
    /// The column.
    pub column: String,
    /// The text before the number (`cus_`), when the column is text.
    pub prefix: Option<String>,
}

/// What a table is, from what its changed rows held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// One row per account, a column moved by the credit's amount: the account's balance.
    Balance {
        /// The account column.
        account: AccountColumn,
        /// The balance column.
        balance: String,
    },
    /// A row per apply for the account (an order, a payment, a usage record).
    Rows {
        /// The account column.
        account: AccountColumn,
        /// A column holding the credit's amount, if one does.
        amount: Option<String>,
        /// A column holding the event id, if one does.
        id: Option<String>,
    },
    /// The account's own row, changed, with no column holding the amount.
    Touched {
        /// The account column.
        account: AccountColumn,
    },
    /// The event id and nothing of the effect: a dedupe table.
    Bookkeeping {
        /// The column holding the event id.
        id: String,
    },
    /// Changed by a delivery whatever its outcome.
    Log,
    /// Changed, holding nothing of the credit.
    Unrelated,
    /// Its rows cannot be read (only its counters are).
    Unreadable,
}

impl Role {
    /// Whether a query of this table is evidence of the effect.
    pub fn is_effect(&self) -> bool {
        matches!(self, Self::Balance { .. } | Self::Rows { .. })
    }

    /// The account column, for a table that has one.
    pub fn account(&self) -> Option<&AccountColumn> {
        match self {
            Self::Balance { account, .. } | Self::Rows { account, .. } | Self::Touched { account } => {
                Some(account)
            }
            _ => None,
        }
    }
}

/// Whether `v` is the number `n`: a JSON number, or text of it (a money string, a numeric type
/// rendered as text).
fn is_number(v: &Value, n: i64) -> bool {
    match v {
        Value::Number(x) => x.as_i64() == Some(n) || x.as_f64() == Some(n as f64),
        Value::String(s) => s.trim().parse::<f64>().is_ok_and(|x| x == n as f64),
        _ => false,
    }
}

/// Whether `v` names `account`, and with what prefix: `42`, `"42"`, `"cus_42"`.
fn names_account(v: &Value, account: i64) -> Option<Option<String>> {
    match v {
        Value::Number(x) if x.as_i64() == Some(account) => Some(None),
        Value::String(s) if s == &account.to_string() => Some(None),
        Value::String(s) => {
            let prefix = s.strip_suffix(&account.to_string())?;
            (!prefix.is_empty() && !prefix.ends_with(|c: char| c.is_ascii_digit()))
                .then(|| Some(prefix.to_string()))
        }
        _ => None,
    }
}

/// The columns of `rows` holding the account, the amount and the event id.
fn columns(rows: &[Values], credit: &Credit) -> (Option<AccountColumn>, Option<String>, Option<String>) {
    let (mut account, mut amount, mut id) = (None, None, None);
    for row in rows {
        for (column, v) in row {
            if account.is_none()
                && let Some(prefix) = names_account(v, credit.account)
            {
                account = Some(AccountColumn { column: column.clone(), prefix });
            } else if amount.is_none() && is_number(v, credit.amount) {
                amount = Some(column.clone());
            } else if id.is_none() && v.as_str() == Some(credit.id.as_str()) {
                id = Some(column.clone());
            }
        }
    }
    (account, amount, id)
}

/// The role of table `t`, which the credit changed as `first` says; `refused` is whether a
/// delivery that must be refused changed it too.
pub fn role(t: &Table, first: &Changed, refused: bool, credit: &Credit) -> Role {
    if first.counted.is_some() {
        return Role::Unreadable;
    }
    if refused {
        return Role::Log;
    }
    let (account, amount, id) = columns(&first.rows, credit);
    match (account, amount, id) {
        (Some(account), Some(balance), _) if t.unique_alone(&account.column) => {
            Role::Balance { account, balance }
        }
        (Some(account), None, _) if t.unique_alone(&account.column) => Role::Touched { account },
        (Some(account), amount, id) => Role::Rows { account, amount, id },
        (None, _, Some(id)) => Role::Bookkeeping { id },
        (None, _, None) => Role::Unrelated,
    }
}

/// The queries proposed, in the audit's flags.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Proposal {
    /// `--applied-query`, from effect rows that carry the event id.
    pub applied: Option<String>,
    /// `--balance-query`.
    pub balance: Option<String>,
    /// `--count-query`.
    pub count: Option<String>,
}

impl Proposal {
    /// Whether anything was proposed.
    pub fn is_empty(&self) -> bool {
        self.applied.is_none() && self.balance.is_none() && self.count.is_none()
    }
}

/// The expression of the account, as an integer, in the dialect (`postgres`, else SQLite's).
fn account_expr(a: &AccountColumn, postgres: bool) -> String {
    let column = identifier(&a.column);
    match &a.prefix {
        None => column,
        Some(p) => {
            let int = if postgres { "bigint" } else { "INTEGER" };
            format!("CAST(substr({column}, {}) AS {int})", p.chars().count() + 1)
        }
    }
}

/// The queries the roles give: a balance from a balance table (else the sum of effect rows'
/// amounts), a count of effect rows, and an applied query of effect rows that carry the event id.
/// The first table of each kind, by name, is proposed; the words name the others.
pub fn propose(roles: &BTreeMap<String, Role>, postgres: bool) -> Proposal {
    let integer = |column: &str| {
        let c = identifier(column);
        if postgres { format!("CAST({c} AS bigint)") } else { c }
    };
    let rows: Vec<(&String, &AccountColumn, &Option<String>, &Option<String>)> = roles
        .iter()
        .filter_map(|(t, r)| match r {
            Role::Rows { account, amount, id } => Some((t, account, amount, id)),
            _ => None,
        })
        .collect();
    let applied = rows.iter().find_map(|(table, _, _, id)| {
        let id = identifier(id.as_deref()?);
        Some(format!("SELECT {id}, count(*) FROM {table} GROUP BY {id}"))
    });
    let unnamed = || rows.iter().filter(|(_, _, _, id)| id.is_none());
    let count = unnamed().next().map(|(table, account, _, _)| {
        let a = account_expr(account, postgres);
        format!("SELECT {a}, count(*) FROM {table} GROUP BY {a}")
    });
    let balance_table = roles.iter().find_map(|(table, r)| match r {
        Role::Balance { account, balance } => {
            Some(format!("SELECT {}, {} FROM {table}", account_expr(account, postgres), integer(balance)))
        }
        _ => None,
    });
    let summed = || {
        unnamed().find_map(|(table, account, amount, _)| {
            let a = account_expr(account, postgres);
            let sum = format!("sum({})", identifier(amount.as_deref()?));
            let sum = if postgres { format!("CAST({sum} AS bigint)") } else { sum };
            Some(format!("SELECT {a}, {sum} FROM {table} GROUP BY {a}"))
        })
    };
    Proposal { applied, count, balance: balance_table.or_else(summed) }
}

/// A row in a few words: `customer=1234, amount=1500`, the columns that hold the credit first.
fn row_words(row: &Values) -> String {
    let shown: Vec<String> = row
        .iter()
        .take(6)
        .map(|(c, v)| match v {
            Value::String(s) if s.chars().count() > 40 => {
                format!("{c}=\"{}...\"", s.chars().take(37).collect::<String>())
            }
            Value::String(s) => format!("{c}=\"{s}\""),
            other => format!("{c}={other}"),
        })
        .collect();
    let more = if row.len() > 6 { ", ..." } else { "" };
    format!("{}{more}", shown.join(", "))
}

/// What the credit did to a table, in words.
pub fn first_words(table: &str, role: &Role, first: &Changed, credit: &Credit) -> String {
    let what = match first.counted {
        Some([i, u, d]) => format!("{i} inserted, {u} updated, {d} deleted by the server's counters"),
        None if first.added > 0 => {
            format!("{} row{} inserted", first.added, if first.added == 1 { "" } else { "s" })
        }
        None => format!("{} row{} updated", first.rows.len(), if first.rows.len() == 1 { "" } else { "s" }),
    };
    let row = first.rows.first().map(|r| format!(" ({})", row_words(r))).unwrap_or_default();
    let meaning = match role {
        Role::Balance { balance, .. } => {
            format!("the account's balance (column {balance}): evidence (a balance query)")
        }
        Role::Rows { id: Some(id), .. } => format!("an effect row that names the event in {id}: evidence (an applied query)"),
        Role::Rows { .. } => "an effect row for the account: evidence (a count query)".to_string(),
        Role::Touched { .. } => format!(
            "the account's own row, with no column holding the amount {}: not proposed",
            grouped(credit.amount.into())
        ),
        Role::Bookkeeping { .. } => {
            "the event id and nothing of the effect: bookkeeping (a dedupe table), one row per event however often the effect ran, never evidence".to_string()
        }
        Role::Log => "changed by a delivery that must be refused too: a log of deliveries, never evidence".to_string(),
        Role::Unrelated => "nothing of the credit (its account, amount or id): not evidence".to_string(),
        Role::Unreadable => {
            "the role cannot read its rows, so what it holds cannot be told: grant SELECT on it to the observer".to_string()
        }
    };
    format!("{table}: {what}{row}: {meaning}")
}

/// What the duplicate did to an effect table, from the account's rows after the credit and after
/// its duplicate: more rows, or a column that moved by the amount again.
pub fn applied_again(
    role: &Role,
    after_first: &[Values],
    after_duplicate: &[Values],
    amount: i64,
) -> Option<String> {
    match role {
        Role::Rows { .. } if after_duplicate.len() > after_first.len() => Some(format!(
            "{} more row{}",
            after_duplicate.len() - after_first.len(),
            if after_duplicate.len() - after_first.len() == 1 { "" } else { "s" }
        )),
        Role::Balance { balance, .. } => {
            let value = |rows: &[Values]| rows.first().and_then(|r| r.get(balance)).and_then(number);
            match (value(after_first), value(after_duplicate)) {
                (Some(a), Some(b)) if b != a => Some(format!(
                    "{balance} moved by {} again (the credit's amount is {})",
                    grouped((b - a) as i128),
                    grouped(amount.into())
                )),
                _ => None,
            }
        }
        _ => None,
    }
}

/// A JSON value as a whole number, when it is one.
fn number(v: &Value) -> Option<i64> {
    match v {
        Value::Number(x) => x.as_i64().or_else(|| x.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64)),
        Value::String(s) => s.trim().parse::<f64>().ok().filter(|f| f.fract() == 0.0).map(|f| f as i64),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn credit() -> Credit {
        Credit { id: "d1_pre_0000".into(), account: 1_234_567, amount: 1_500 }
    }

    fn table(name: &str, unique: &[&str]) -> Table {
        Table::for_tests(name, unique)
    }

    fn changed(table: &str, added: i64, rows: Vec<Value>) -> Changed {
        let rows = rows.into_iter().map(|r| serde_json::from_value(r).expect("an object")).collect();
        Changed { table: table.into(), added, rows, counted: None }
    }

    #[test]
    fn a_table_holding_the_event_id_and_nothing_of_the_effect_is_bookkeeping() {
        let t = table("processed_events", &["event_id"]);
        let first =
            changed("processed_events", 1, vec![json!({"event_id": "d1_pre_0000", "processed_at": 17.5})]);
        assert_eq!(role(&t, &first, false, &credit()), Role::Bookkeeping { id: "event_id".into() });
        let words = first_words("processed_events", &role(&t, &first, false, &credit()), &first, &credit());
        assert!(words.contains("bookkeeping") && words.contains("never evidence"), "{words}");
    }

    #[test]
    fn a_row_per_apply_and_a_balance_per_account_are_effects() {
        let credits = table("credits", &["id"]);
        let first = changed("credits", 1, vec![json!({"id": 9, "customer": 1_234_567, "amount": 1500})]);
        let account = AccountColumn { column: "customer".into(), prefix: None };
        let rows = Role::Rows { account: account.clone(), amount: Some("amount".into()), id: None };
        assert_eq!(role(&credits, &first, false, &credit()), rows);
        let customers = table("customers", &["id"]);
        let first = changed("customers", 1, vec![json!({"id": 1_234_567, "balance": 1500})]);
        let balance = Role::Balance {
            account: AccountColumn { column: "id".into(), prefix: None },
            balance: "balance".into(),
        };
        assert_eq!(role(&customers, &first, false, &credit()), balance);
        let roles = BTreeMap::from([("credits".to_string(), rows), ("customers".to_string(), balance)]);
        let p = propose(&roles, false);
        assert_eq!(p.balance.as_deref(), Some("SELECT id, balance FROM customers"));
        assert_eq!(p.count.as_deref(), Some("SELECT customer, count(*) FROM credits GROUP BY customer"));
        assert_eq!(p.applied, None);
        let p = propose(&roles, true);
        assert_eq!(p.balance.as_deref(), Some("SELECT id, CAST(balance AS bigint) FROM customers"));
    }

    #[test]
    fn effect_rows_alone_give_a_count_and_a_sum_and_an_event_id_gives_an_applied_query() {
        let account = AccountColumn { column: "customer".into(), prefix: Some("cus_".into()) };
        let rows = Role::Rows { account: account.clone(), amount: Some("cents".into()), id: None };
        let p = propose(&BTreeMap::from([("payments".to_string(), rows)]), true);
        assert_eq!(
            p.count.as_deref(),
            Some(
                "SELECT CAST(substr(customer, 5) AS bigint), count(*) FROM payments GROUP BY CAST(substr(customer, 5) AS bigint)"
            )
        );
        assert!(p.balance.as_deref().is_some_and(|b| b.contains("CAST(sum(cents) AS bigint)")), "{p:?}");
        let ledger = Role::Rows { account, amount: Some("cents".into()), id: Some("event_id".into()) };
        let p = propose(&BTreeMap::from([("ledger".to_string(), ledger)]), false);
        assert_eq!(p.applied.as_deref(), Some("SELECT event_id, count(*) FROM ledger GROUP BY event_id"));
        assert!(p.count.is_none() && p.balance.is_none());
    }

    #[test]
    fn a_table_a_refused_delivery_changed_is_a_log_whatever_it_holds() {
        let t = table("webhook_log", &["id"]);
        let first = changed(
            "webhook_log",
            1,
            vec![json!({"id": 1, "event_id": "d1_pre_0000", "customer": 1_234_567})],
        );
        assert_eq!(role(&t, &first, true, &credit()), Role::Log);
        assert!(propose(&BTreeMap::from([("webhook_log".to_string(), Role::Log)]), false).is_empty());
    }

    #[test]
    fn accounts_are_read_as_numbers_or_prefixed_text() {
        assert_eq!(names_account(&json!(42), 42), Some(None));
        assert_eq!(names_account(&json!("42"), 42), Some(None));
        assert_eq!(names_account(&json!("cus_42"), 42), Some(Some("cus_".into())));
        assert_eq!(names_account(&json!("cus_142"), 42), None, "another account's digits");
        assert_eq!(names_account(&json!(43), 42), None);
        assert!(
            is_number(&json!(1500.0), 1500)
                && is_number(&json!("1500.00"), 1500)
                && !is_number(&json!(15), 1500)
        );
    }

    #[test]
    fn a_duplicate_applied_again_shows_as_more_rows_or_a_balance_moved() {
        let account = AccountColumn { column: "customer".into(), prefix: None };
        let rows = Role::Rows { account: account.clone(), amount: None, id: None };
        let one: Vec<Values> = vec![serde_json::from_value(json!({"customer": 1})).expect("row")];
        let two: Vec<Values> = [one.clone(), one.clone()].concat();
        assert_eq!(applied_again(&rows, &one, &two, 1500), Some("1 more row".to_string()));
        assert_eq!(applied_again(&rows, &one, &one, 1500), None);
        let balance = Role::Balance { account, balance: "balance".into() };
        let b = |v: i64| -> Vec<Values> {
            vec![serde_json::from_value(json!({"customer": 1, "balance": v})).expect("row")]
        };
        assert_eq!(
            applied_again(&balance, &b(1500), &b(3000), 1500),
            Some("balance moved by 1,500 again (the credit's amount is 1,500)".to_string())
        );
        assert_eq!(applied_again(&balance, &b(1500), &b(1500), 1500), None);
    }
}
