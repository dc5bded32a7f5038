//! A TCP proxy that can be cut and restored: how a test takes a database out of reach of one
//! receiver without stopping the server every other test shares.

use std::net::SocketAddr;
use std::sync::Mutex;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

pub struct Proxy {
    pub addr: SocketAddr,
    upstream: SocketAddr,
    cut: Mutex<Option<watch::Sender<bool>>>,
}

impl Proxy {
    /// Forwards a free 127.0.0.1 port to `upstream`.
    pub async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let addr = listener.local_addr().expect("addr");
        let proxy = Self { addr, upstream, cut: Mutex::new(None) };
        proxy.serve(listener);
        proxy
    }

    fn serve(&self, listener: TcpListener) {
        let (tx, rx) = watch::channel(false);
        *self.cut.lock().expect("lock") = Some(tx);
        let upstream = self.upstream;
        tokio::spawn(async move {
            let mut stop = rx.clone();
            loop {
                let accepted = tokio::select! {
                    a = listener.accept() => a,
                    _ = stop.changed() => return, // the listener closes: new connections are refused
                };
                let Ok((mut client, _)) = accepted else { continue };
                let mut stop = rx.clone();
                tokio::spawn(async move {
                    let Ok(mut server) = TcpStream::connect(upstream).await else { return };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                        _ = stop.changed() => {} // both sockets dropped: the connection is cut
                    }
                });
            }
        });
    }

    /// Ends every connection through the proxy and refuses new ones.
    pub fn cut(&self) {
        if let Some(tx) = self.cut.lock().expect("lock").take() {
            let _ = tx.send(true);
        }
    }

    /// Listens again on the same address.
    pub async fn restore(&self) {
        let listener = TcpListener::bind(self.addr).await.expect("rebind proxy");
        self.serve(listener);
    }

    /// `url` (postgres://...) with its host and port replaced by the proxy's.
    pub fn url_through(&self, url: &str) -> String {
        let mut u = url::Url::parse(url).expect("database URL");
        u.set_host(Some(&self.addr.ip().to_string())).expect("host");
        u.set_port(Some(self.addr.port())).expect("port");
        u.to_string()
    }
}

/// The host and port a postgres:// URL names.
pub fn upstream_of(url: &str) -> SocketAddr {
    let u = url::Url::parse(url).expect("database URL");
    let host = u.host_str().expect("host");
    let port = u.port().unwrap_or(5432);
    std::net::ToSocketAddrs::to_socket_addrs(&(host, port)).expect("resolve").next().expect("an address")
}
