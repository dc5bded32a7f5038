//! What hookbench's tests share (a dev-dependency of `receivers` and of `hookbench`): real
//! databases (a Postgres server per test binary, a fresh database or SQLite file per test, and
//! queries of the test's own for its assertions), a receiver served in this process, signed
//! deliveries, a TCP proxy that can be cut, `hookbench serve` as a process, and a page opened in
//! headless Chromium.
#![allow(missing_docs)]

pub mod browser;
pub mod measure;
pub mod proxy;
pub mod worker;

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use provision::{
    FreshDatabase, FreshMysqlDatabase, MysqlServer, MysqlSettings, PostgresMode, PostgresServer,
    PostgresSettings, SqliteFile,
};
use receivers::app::{self, AppState};
use receivers::design::Design;
use receivers::event::Event;
use receivers::signature::{HEADER_ID, HEADER_SIGNATURE, HEADER_TIMESTAMP, Secret, Verifier};
use receivers::store::{Backend, INBOX_MAX_ATTEMPTS, Store, StoreOptions};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

pub const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

pub fn secret() -> Secret {
    SECRET.parse().expect("valid secret")
}

/// The Postgres server of this test binary: `DATABASE_URL` if set, else a container started with
/// testcontainers (image and network from HOOKBENCH_PG_IMAGE / HOOKBENCH_DOCKER_NETWORK).
pub fn pg_server() -> &'static PostgresServer {
    static SERVER: OnceLock<PostgresServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        std::thread::spawn(|| {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
            rt.block_on(PostgresServer::start(&PostgresSettings::from_env(PostgresMode::Auto)))
        })
        .join()
        .expect("provisioning thread")
        .unwrap_or_else(|e| panic!("tests need Postgres: {e}"))
    })
}

/// The MySQL/MariaDB server of this test binary: `MYSQL_URL` if set, else a container started
/// with testcontainers (image from HOOKBENCH_MYSQL_IMAGE, which scripts/test.sh chooses).
pub fn mysql_server() -> &'static MysqlServer {
    static SERVER: OnceLock<MysqlServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        std::thread::spawn(|| {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
            rt.block_on(MysqlServer::start(&MysqlSettings::from_env()))
        })
        .join()
        .expect("provisioning thread")
        .unwrap_or_else(|e| panic!("tests need MySQL or MariaDB: {e} (scripts/test.sh readies one)"))
    })
}

/// A fresh database on [`mysql_server`], not migrated: its URL, and the handle that drops it.
pub async fn fresh_mysql() -> FreshMysqlDatabase {
    mysql_server().fresh_database().await.expect("fresh MySQL database")
}

/// A fresh database of one backend, migrated: the receivers' store on it, and the test's own
/// pool for the queries its assertions read.
pub struct Db {
    pub backend: Backend,
    pub url: String,
    pub store: Store,
    pool: Pool,
    pg: Option<FreshDatabase>,
    my: Option<FreshMysqlDatabase>,
    _sqlite: Option<SqliteFile>,
}

/// The test's own connections (never the receivers').
#[derive(Clone)]
enum Pool {
    Postgres(sqlx::PgPool),
    Sqlite(sqlx::SqlitePool),
    Mysql(sqlx::MySqlPool),
}

/// Runs the same statement on whichever pool the test holds.
macro_rules! on_pool {
    ($pool:expr, |$p:ident| $body:expr) => {
        match $pool {
            Pool::Postgres($p) => $body,
            Pool::Sqlite($p) => $body,
            Pool::Mysql($p) => $body,
        }
    };
}

impl Db {
    pub async fn fresh(backend: Backend) -> Self {
        let (mut pg, mut my, mut sqlite) = (None, None, None);
        let url = match backend {
            Backend::Postgres => {
                pg.insert(pg_server().fresh_database().await.expect("fresh Postgres database")).url.clone()
            }
            Backend::Sqlite => sqlite.insert(SqliteFile::create(None).expect("fresh SQLite file")).url(),
            Backend::Mysql => my.insert(fresh_mysql().await).url.clone(),
        };
        let store = Store::connect(&url, &StoreOptions::default()).await.expect("connect and migrate");
        let pool = match backend {
            Backend::Postgres => Pool::Postgres(sqlx::PgPool::connect(&url).await.expect("test pool")),
            Backend::Sqlite => Pool::Sqlite(sqlx::SqlitePool::connect(&url).await.expect("test pool")),
            Backend::Mysql => Pool::Mysql(sqlx::MySqlPool::connect(&url).await.expect("test pool")),
        };
        Self { backend, url, store, pool, pg, my, _sqlite: sqlite }
    }

    /// Drops a Postgres or MySQL database (SQLite files go with their temporary directory).
    pub async fn cleanup(self) {
        self.store.close().await;
        on_pool!(&self.pool, |pool| pool.close().await);
        if let Some(pg) = self.pg {
            pg.drop_database().await.expect("drop database");
        }
        if let Some(my) = self.my {
            my.drop_database().await.expect("drop database");
        }
    }

    /// One integer. The tests write `CAST(x AS BIGINT)`, which MySQL spells `CAST(x AS SIGNED)`.
    pub async fn scalar(&self, sql: &'static str) -> i64 {
        match &self.pool {
            Pool::Mysql(pool) => {
                sqlx::query_scalar(sqlx::AssertSqlSafe(sql.replace(" AS BIGINT)", " AS SIGNED)")))
                    .fetch_one(pool)
                    .await
                    .expect(sql)
            }
            pool => on_pool!(pool, |pool| sqlx::query_scalar(sql).fetch_one(pool).await.expect(sql)),
        }
    }

    pub async fn pairs(&self, sql: &'static str) -> Vec<(String, i64)> {
        on_pool!(&self.pool, |pool| sqlx::query_as(sql).fetch_all(pool).await.expect(sql))
    }

    pub async fn execute(&self, sql: &'static str) {
        on_pool!(&self.pool, |pool| sqlx::query(sql).execute(pool).await.map(drop).expect(sql))
    }

    /// Ledger rows per event id.
    pub async fn applies(&self) -> Vec<(String, i64)> {
        self.pairs("SELECT event_id, count(*) FROM credit_ledger GROUP BY event_id ORDER BY event_id").await
    }

    /// Rows in every table the receivers write.
    pub async fn rows(&self) -> [i64; 5] {
        [
            self.scalar("SELECT count(*) FROM accounts").await,
            self.scalar("SELECT count(*) FROM processed_events").await,
            self.scalar("SELECT count(*) FROM credit_ledger").await,
            self.scalar("SELECT count(*) FROM plan_changes").await,
            self.scalar("SELECT count(*) FROM webhook_inbox").await,
        ]
    }

    pub async fn plan_version(&self, account: i64) -> i64 {
        let sql = "SELECT plan_version FROM accounts WHERE id = 7";
        assert_eq!(account, 7, "tests use account 7");
        self.scalar(sql).await
    }

    /// Inbox rows neither processed nor dead letters.
    pub async fn pending(&self) -> i64 {
        let sql = format!(
            "SELECT count(*) FROM webhook_inbox WHERE processed_at IS NULL AND attempts < {INBOX_MAX_ATTEMPTS}"
        );
        on_pool!(&self.pool, |pool| sqlx::query_scalar(sqlx::AssertSqlSafe(sql.clone()))
            .fetch_one(pool)
            .await)
        .expect("pending inbox rows")
    }

    /// Waits until the inbox has no pending row (a safeguard, not a speed check).
    pub async fn drain_inbox(&self) {
        for _ in 0..600 {
            if self.pending().await == 0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("inbox did not drain within 30 s");
    }
}

/// A receiver served in this process on 127.0.0.1:0, stopped by dropping `stop`.
pub struct Server {
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    done: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl Server {
    pub async fn start(design: Design, db: &Db, work_delay: Duration) -> Self {
        Self::start_state(state(design, db.store.clone(), work_delay)).await
    }

    /// Serves `state` (two inbox claim loops when its design is `inbox`).
    pub async fn start_state(state: AppState) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (tx, rx) = oneshot::channel::<()>();
        let done =
            tokio::spawn(app::serve(listener, async move { rx.await.unwrap_or(()) }, Arc::new(state), 2));
        Self { addr, stop: Some(tx), done: Some(done) }
    }

    pub fn url(&self) -> String {
        format!("http://{}/webhooks/acme", self.addr)
    }

    pub async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(done) = self.done.take() {
            done.await.expect("server task").expect("server stopped cleanly");
        }
    }
}

/// A receiver's state: `design` over `store`, verifying with the test secret.
pub fn state(design: Design, store: Store, work_delay: Duration) -> AppState {
    AppState::new(design, store, Verifier::new(vec![secret()]), work_delay)
}

pub fn now() -> i64 {
    jiff::Timestamp::now().as_second()
}

pub fn credit(id: &str, amount: i64) -> Event {
    Event::Credit { id: id.into(), account: 7, amount, created: 1_790_000_000 }
}

pub fn plan(id: &str, version: i64, created: i64) -> Event {
    Event::Plan { id: id.into(), account: 7, plan: format!("plan_v{version}"), version, created }
}

/// Posts `body` signed now with the test secret under `id`; `Err` when no response came.
pub async fn try_post_raw(
    client: &reqwest::Client,
    url: &str,
    id: &str,
    body: Vec<u8>,
) -> Result<(u16, String), reqwest::Error> {
    let ts = now();
    let sig = secret().sign(id, ts, &body);
    let r = client
        .post(url)
        .header(HEADER_ID, id)
        .header(HEADER_TIMESTAMP, ts.to_string())
        .header(HEADER_SIGNATURE, sig)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await?;
    let status = r.status().as_u16();
    Ok((status, r.text().await.unwrap_or_default()))
}

/// Posts `body` signed now with the test secret under `id`.
pub async fn post_raw(client: &reqwest::Client, url: &str, id: &str, body: Vec<u8>) -> (u16, String) {
    try_post_raw(client, url, id, body).await.expect("request")
}

/// One signed delivery, its headers made once, so the very same request can be sent again (to
/// another path, or with extra headers).
pub struct Signed {
    pub id: String,
    pub timestamp: String,
    pub signature: String,
    pub body: Vec<u8>,
}

impl Signed {
    /// `event` signed now with the test secret.
    pub fn new(event: &Event) -> Self {
        Self::raw(event.id(), serde_json::to_vec(event).expect("json"))
    }

    /// `body` signed now with the test secret under `id`.
    pub fn raw(id: &str, body: Vec<u8>) -> Self {
        let ts = now();
        Self { id: id.into(), timestamp: ts.to_string(), signature: secret().sign(id, ts, &body), body }
    }

    /// The request, not yet sent.
    pub fn request(&self, client: &reqwest::Client, url: &str) -> reqwest::RequestBuilder {
        client
            .post(url)
            .header(HEADER_ID, &self.id)
            .header(HEADER_TIMESTAMP, &self.timestamp)
            .header(HEADER_SIGNATURE, &self.signature)
            .header("content-type", "application/json")
            .body(self.body.clone())
    }

    /// Sends it to `url`; the status and the body.
    pub async fn post(&self, client: &reqwest::Client, url: &str) -> (u16, String) {
        answer(self.request(client, url)).await
    }
}

/// Sends a request; the status and the body.
pub async fn answer(request: reqwest::RequestBuilder) -> (u16, String) {
    let r = request.send().await.expect("request");
    let status = r.status().as_u16();
    (status, r.text().await.unwrap_or_default())
}

/// Posts `event`, signed now; `Err` when no response came (a dead worker).
pub async fn try_post(
    client: &reqwest::Client,
    url: &str,
    event: &Event,
) -> Result<(u16, String), reqwest::Error> {
    try_post_raw(client, url, event.id(), serde_json::to_vec(event).expect("json")).await
}

pub async fn post(client: &reqwest::Client, url: &str, event: &Event) -> (u16, String) {
    post_raw(client, url, event.id(), serde_json::to_vec(event).expect("json")).await
}

/// Posts `event` until it is acknowledged, for at most `within`; the last answer.
pub async fn post_until_acknowledged(
    client: &reqwest::Client,
    url: &str,
    id: &str,
    within: Duration,
) -> (u16, String) {
    let start = Instant::now();
    loop {
        let answer = match Signed::new(&credit(id, 100)).request(client, url).send().await {
            Ok(r) => (r.status().as_u16(), r.text().await.unwrap_or_default()),
            Err(e) => (0, e.to_string()),
        };
        if answer.0 == 200 || start.elapsed() > within {
            return answer;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `GET` of `url`: the status and the body.
pub async fn health(client: &reqwest::Client, url: &str) -> (u16, String) {
    answer(client.get(url)).await
}

/// A request head that passes the checks made before the body is read (the signature headers
/// are present and the timestamp is fresh), so the server goes on to read the body.
pub fn signed_looking_head(framing: &str) -> String {
    format!(
        "POST /webhooks/acme HTTP/1.1\r\nhost: 127.0.0.1\r\nwebhook-id: evt_000001\r\n\
         webhook-timestamp: {}\r\nwebhook-signature: v1,bm90IGEgcmVhbCBvbmU=\r\n\
         content-type: application/json\r\n{framing}\r\n",
        now()
    )
}

/// Connects to `addr` and writes `bytes`.
pub async fn send(addr: SocketAddr, bytes: &[u8]) -> TcpStream {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.write_all(bytes).await.expect("write");
    stream
}
