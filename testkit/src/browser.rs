//! A report page opened in a real headless Chromium (Debian's `chromium`; `scripts/browser.sh`
//! installs it), with every network request it makes caught.
//!
//! The page is loaded in an iframe of a small wrapper page beside it; once everything has loaded,
//! the wrapper's script measures what the browser laid out (the size of the elements asked for,
//! the resources the page fetched by the Resource Timing API) and writes it into its own DOM,
//! which Chromium prints (`--dump-dom`). Chromium is pointed at a proxy this module runs, loopback
//! included, so any request for anything over the network reaches it and is recorded.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the browser made of a page.
#[derive(Debug)]
pub struct Rendered {
    /// The page's title.
    pub title: String,
    /// Per CSS selector asked for: how many elements matched and the width and height (CSS
    /// pixels) of each.
    pub boxes: Vec<(String, Vec<(u32, u32)>)>,
    /// The ids of the page's `figure` elements, each with its SVG's rendered width and height.
    pub figures: Vec<(String, (u32, u32))>,
    /// Resources the page fetched (Resource Timing entries), by URL.
    pub resources: Vec<String>,
    /// Requests that reached the proxy, the browser's own included: the first line of each.
    pub requests: Vec<String>,
}

/// Hosts Chromium asks by itself whatever page it shows, whatever flags it is given (seen with
/// Debian's Chromium 156 on a blank page): its component updater, its account sign-in and its
/// network clock. A page fetching anything shows up as another host.
const BROWSER_OWN: [&str; 3] = ["update.googleapis.com", "accounts.google.com", "clients2.google.com"];

/// The host a proxied request's first line names (`CONNECT host:443 ...`, `GET http://host/...`).
fn host(request: &str) -> &str {
    let target = request.split(' ').nth(1).unwrap_or_default();
    let target = target.split_once("://").map_or(target, |(_, rest)| rest);
    target.split(['/', ':']).next().unwrap_or_default()
}

impl Rendered {
    /// The requests that did not come from the browser's own services: the page's.
    pub fn page_requests(&self) -> Vec<&str> {
        self.requests.iter().map(String::as_str).filter(|r| !BROWSER_OWN.contains(&host(r))).collect()
    }

    /// The boxes of `selector`.
    pub fn boxes(&self, selector: &str) -> &[(u32, u32)] {
        self.boxes.iter().find(|(s, _)| s == selector).map_or(&[], |(_, b)| b.as_slice())
    }
}

/// The Chromium to run: `HOOKBENCH_CHROMIUM`, else the first of Debian's and others' names on
/// the PATH.
pub fn chromium() -> PathBuf {
    if let Some(p) = std::env::var_os("HOOKBENCH_CHROMIUM") {
        return PathBuf::from(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        if let Some(found) = std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file()) {
            return found;
        }
    }
    panic!(
        "no Chromium on the PATH (chromium, chromium-browser, google-chrome) and HOOKBENCH_CHROMIUM is not set: \
         run scripts/browser.sh (Debian: apt-get install chromium)"
    );
}

const WRAPPER: &str = r#"<!doctype html>
<html><head><meta charset="utf-8"><title>hookbench browser test</title></head><body>
<iframe id="page" src="PAGE" style="width:1280px;height:1000px"></iframe>
<pre id="result"></pre>
<script>
window.addEventListener('load', () => {
  const frame = document.getElementById('page');
  const d = frame.contentDocument;
  const size = e => { const r = e.getBoundingClientRect(); return [Math.round(r.width), Math.round(r.height)]; };
  const result = {
    title: d.title,
    boxes: SELECTORS.map(s => [s, Array.from(d.querySelectorAll(s)).map(size)]),
    figures: Array.from(d.querySelectorAll('figure')).map(f => {
      const svg = f.querySelector('svg');
      return [f.id, svg ? size(svg) : [0, 0]];
    }),
    resources: frame.contentWindow.performance.getEntriesByType('resource').map(r => r.name),
  };
  document.getElementById('result').textContent = JSON.stringify(result);
});
</script></body></html>
"#;

/// Opens `page` (an HTML file) in headless Chromium and reports what it laid out for each of
/// `selectors`, its figures, and what it fetched.
pub fn render(page: &Path, selectors: &[&str]) -> Rendered {
    let dir = page.parent().expect("the page is in a directory");
    let name = page.file_name().and_then(|n| n.to_str()).expect("a UTF-8 file name");
    let wrapper = dir.join(format!("browser-test-{name}"));
    let selectors = serde_json::to_string(selectors).expect("selectors as JSON");
    std::fs::write(&wrapper, WRAPPER.replace("PAGE", name).replace("SELECTORS", &selectors))
        .expect("write the wrapper page");
    let profile = dir.join("browser-test-profile");

    let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
    let proxy = listener.local_addr().expect("the proxy's address");
    let requests = Arc::new(Mutex::new(Vec::new()));
    let done = Arc::new(AtomicBool::new(false));
    let catcher = {
        let (requests, done) = (requests.clone(), done.clone());
        listener.set_nonblocking(true).expect("a non-blocking listener");
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let _ = stream.set_nonblocking(false);
                        let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
                        let mut first = String::new();
                        let _ = BufReader::new(stream).read_line(&mut first);
                        // A connection that sent nothing before closing or the timeout (seen once
                        // in CI from Chromium's own services) made no request.
                        if !first.trim().is_empty() {
                            requests.lock().expect("requests").push(first.trim().to_string());
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        })
    };
    let out = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-default-apps",
            "--disable-extensions",
            "--disable-sync",
            "--disable-features=NetworkTimeServiceQuerying",
            "--allow-file-access-from-files",
            "--virtual-time-budget=10000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--proxy-server=http://{proxy}"))
        // Loopback through the proxy too: nothing may bypass it.
        .arg("--proxy-bypass-list=<-loopback>")
        .arg("--dump-dom")
        .arg(format!("file://{}", wrapper.display()))
        .output()
        .expect("run Chromium");
    done.store(true, Ordering::Relaxed);
    catcher.join().expect("the proxy thread");
    let dom = String::from_utf8_lossy(&out.stdout);
    let json = dom
        .split_once("<pre id=\"result\">")
        .and_then(|(_, rest)| rest.split_once("</pre>"))
        .map(|(json, _)| {
            json.replace("&quot;", "\"").replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
        })
        .unwrap_or_else(|| {
            panic!(
                "Chromium printed no result (status {}):\n{dom}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            )
        });
    let v: serde_json::Value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"));
    let size = |s: &serde_json::Value| (s[0].as_u64().unwrap_or(0) as u32, s[1].as_u64().unwrap_or(0) as u32);
    let list = |k: &str| v[k].as_array().cloned().unwrap_or_default();
    let requests = requests.lock().expect("requests").clone();
    Rendered {
        title: v["title"].as_str().unwrap_or_default().to_string(),
        boxes: list("boxes")
            .iter()
            .map(|b| {
                let boxes = b[1].as_array().cloned().unwrap_or_default();
                (b[0].as_str().unwrap_or_default().to_string(), boxes.iter().map(size).collect())
            })
            .collect(),
        figures: list("figures")
            .iter()
            .map(|f| (f[0].as_str().unwrap_or_default().to_string(), size(&f[1])))
            .collect(),
        resources: list("resources").iter().map(|r| r.as_str().unwrap_or_default().to_string()).collect(),
        requests,
    }
}
