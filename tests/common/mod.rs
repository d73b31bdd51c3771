//! Helpers the integration tests share: temporary files, scenario files (whole or cut short),
//! the server's log read back, the people's dialogues imported once per test run, a mock
//! endpoint on its own thread with waits on a process's output, and a WebSocket client
//! speaking JSON. (Each test module uses part of it.)

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message as WsMessage;

use dealgym::dialogues::{import_family, FamilyImport, ImportOptions};
use dealgym::record::{EpisodeRecord, RecordReader};
use dealgym::run::{run, RunOptions, RunSummary};
use dealgym::scenario::Family;
use dealgym_mock::{MockConfig, MockServer, MockStats};

/// Every family, in `Family::ALL`'s order (bundle and hotel generated, the others imported).
pub const FAMILIES: [&str; 7] = [
    "ahp",
    "craigslist",
    "casino",
    "dnd",
    "job_interview",
    "bundle",
    "hotel",
];

/// A fresh temporary directory for one test. All test modules share one process (and so one
/// pid in the path): a name asked for twice would let two tests clear each other's files, so
/// that panics here, naming the name.
pub fn temp_dir(name: &str) -> PathBuf {
    static TAKEN: Mutex<Vec<String>> = Mutex::new(Vec::new());
    {
        let mut taken = TAKEN.lock().unwrap_or_else(|e| e.into_inner());
        assert!(
            !taken.iter().any(|n| n == name),
            "two tests asked for the temporary directory {name:?}: give each its own name"
        );
        taken.push(name.to_string());
    }
    let dir = std::env::temp_dir().join(format!("dealgym-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `episodes.jsonl` in a fresh temporary directory for one test.
pub fn out_file(name: &str) -> PathBuf {
    temp_dir(name).join("episodes.jsonl")
}

/// Every family's whole scenario file, as the importer wrote it.
pub fn all_scenario_files() -> Vec<PathBuf> {
    FAMILIES
        .iter()
        .map(|family| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("scenarios")
                .join(format!("{family}.jsonl"))
        })
        .collect()
}

/// The first `n` scenarios of every family, one file per family (fast to load in debug).
pub fn scenario_files(dir: &Path, n: usize) -> Vec<PathBuf> {
    FAMILIES
        .iter()
        .map(|family| {
            let source = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("scenarios")
                .join(format!("{family}.jsonl"));
            let text = std::fs::read_to_string(source).unwrap();
            let head: String = text.lines().take(n).map(|l| format!("{l}\n")).collect();
            let path = dir.join(format!("{family}.jsonl"));
            std::fs::write(&path, head).unwrap();
            path
        })
        .collect()
}

/// The raw public datasets beside the checkout (`../shared/datasets`), where they are.
pub fn datasets_dir() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/datasets");
    dir.is_dir().then_some(dir)
}

/// The people's dialogues of `family` (`casino`, `craigslist`, `dnd`, `job_interview`) as
/// episode records: `dealgym dialogues import` of that family, done in-process the first time
/// a test of this binary asks, into a temporary folder, and reused after. `None` — and
/// `SKIPPED: …` printed — where `../shared/datasets` is absent: the test returns early.
/// (Import only the families a test needs: CaSiNo takes about a second in debug, DnD
/// several.)
pub fn dialogues(family: &str) -> Option<PathBuf> {
    dialogue_import(family).and_then(|report| report.file)
}

/// What the import of [`dialogues`] said about `family` (read, imported, matched, skips).
pub fn dialogue_import(family: &str) -> Option<FamilyImport> {
    static IMPORTS: OnceLock<Mutex<HashMap<Family, FamilyImport>>> = OnceLock::new();
    let family: Family = family.parse().unwrap();
    let Some(datasets) = datasets_dir() else {
        println!("SKIPPED: no ../shared/datasets to import the {family} dialogues from");
        return None;
    };
    let mut imports = IMPORTS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(report) = imports.get(&family) {
        return Some(report.clone());
    }
    let options = ImportOptions {
        datasets,
        scenarios: Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios"),
        out: std::env::temp_dir().join(format!("dealgym-dialogues-{}", std::process::id())),
        families: vec![family],
    };
    let report = import_family(family, &options).expect("the dialogues import");
    imports.insert(family, report.clone());
    Some(report)
}

/// Play a run to its end (no stop) and return its summary.
pub async fn run_to_end(options: &RunOptions) -> RunSummary {
    run(options, std::future::pending())
        .await
        .expect("run completes")
}

/// Every record of a log (none if it was never written).
pub fn read_log(path: &Path) -> Vec<EpisodeRecord> {
    if !path.exists() {
        return Vec::new();
    }
    RecordReader::open(path)
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
}

/// GET a URL and read the JSON answer, whatever its status.
pub async fn get_json(http: &reqwest::Client, url: String) -> Value {
    http.get(url).send().await.unwrap().json().await.unwrap()
}

/// POST a JSON body and read the JSON answer, whatever its status.
pub async fn post_json(http: &reqwest::Client, url: String, body: &Value) -> Value {
    http.post(url)
        .json(body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

pub type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

pub async fn ws_connect(addr: SocketAddr) -> Ws {
    tokio_tungstenite::connect_async(format!("ws://{addr}/ws"))
        .await
        .unwrap()
        .0
}

pub async fn ws_send(ws: &mut Ws, message: Value) -> Value {
    ws.send(WsMessage::text(message.to_string())).await.unwrap();
    ws_recv(ws).await
}

pub async fn ws_recv(ws: &mut Ws) -> Value {
    loop {
        match ws.next().await.unwrap().unwrap() {
            WsMessage::Text(t) => return serde_json::from_str(&t).unwrap(),
            WsMessage::Close(_) => panic!("closed"),
            _ => continue,
        }
    }
}

/// A mock endpoint served from its own thread and runtime, so a test can block (start, wait
/// for and kill processes) while it answers. Stopped when dropped.
pub struct ThreadedMock {
    pub url: String,
    pub stats: Arc<MockStats>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

pub fn threaded_mock(config: MockConfig) -> ThreadedMock {
    let (tx, rx) = std::sync::mpsc::channel();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let server = MockServer::start(SocketAddr::from(([127, 0, 0, 1], 0)), config)
                .await
                .unwrap();
            tx.send((server.base_url(), server.stats.clone())).unwrap();
            let _ = stopped.await;
            server.stop();
        });
    });
    let (url, stats) = rx.recv().unwrap();
    ThreadedMock {
        url,
        stats,
        _stop: stop,
    }
}

/// The `dealgym` binary run with `args` in the checkout, to its end.
pub fn dealgym_cli<I, S>(args: I) -> std::process::Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    std::process::Command::new(env!("CARGO_BIN_EXE_dealgym"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .output()
        .unwrap()
}

/// Every line of a JSONL file, as JSON values.
pub fn json_lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `output`, asserting it succeeded (its stdout and stderr shown if not).
pub fn succeeded(output: std::process::Output) -> std::process::Output {
    assert!(
        output.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Whole lines in the file (a cut-off last line is not counted; 0 when there is no file).
pub fn whole_lines(path: &Path) -> usize {
    std::fs::read(path)
        .map(|t| t.iter().filter(|b| **b == b'\n').count())
        .unwrap_or(0)
}

/// Wait until `done()`, failing if `child` ends first (before `what`) or nothing happens for
/// a minute.
pub fn wait_until(child: &mut Child, what: &str, done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the process ended before {what}"
        );
        assert!(start.elapsed() < Duration::from_secs(60), "no progress");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Wait until `path` holds `n` whole lines (see [`wait_until`]).
pub fn wait_for_lines(child: &mut Child, path: &Path, n: usize) {
    wait_until(child, &format!("{n} lines"), || whole_lines(path) >= n);
}

/// The resident memory of process `pid`, in bytes (`VmRSS` of `/proc/PID/status`).
pub fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb * 1024
}

/// `dealgym serve` as its own process on a free port (so its memory can be measured), over
/// AHP's scenarios and `extra`'s, logging to `dir/serve.jsonl`; its address, once it says it.
/// Killed when dropped.
pub struct ServeProcess {
    pub child: Child,
    pub base: String,
    /// What it has said on stderr since it started serving (its first 1 MiB).
    said: Arc<Mutex<String>>,
}

impl ServeProcess {
    pub fn start(dir: &Path, extra: &[&str]) -> ServeProcess {
        use std::io::{BufRead, BufReader};
        let log = dir.join("serve.jsonl");
        let ahp = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/ahp.jsonl");
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_dealgym"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(["serve", "--port", "0", "--body-limit", "4194304"])
            .arg("--log")
            .arg(&log)
            .arg("--scenarios")
            .arg(&ahp)
            .args(extra)
            .stderr(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        let started = Instant::now();
        let base = loop {
            line.clear();
            assert!(
                stderr.read_line(&mut line).unwrap() > 0,
                "serve ended: {line}"
            );
            if let Some(rest) = line.split("serve on ").nth(1) {
                break rest.split_whitespace().next().unwrap().to_string();
            }
            assert!(started.elapsed() < Duration::from_secs(60));
        };
        // Keep draining its stderr, so the server never blocks writing to it.
        let said = Arc::new(Mutex::new(String::new()));
        let kept = said.clone();
        std::thread::spawn(move || {
            let mut next = String::new();
            while stderr.read_line(&mut next).unwrap_or(0) > 0 {
                let mut kept = kept.lock().unwrap_or_else(|e| e.into_inner());
                if kept.len() < 1 << 20 {
                    kept.push_str(&next);
                }
                next.clear();
            }
        });
        ServeProcess { child, base, said }
    }

    /// What the server has said on stderr since it started serving.
    pub fn said(&self) -> String {
        self.said.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A REST call (`method` one of GET, POST, DELETE) with an optional JSON body: the status and
/// the answer as JSON (null for an empty body, a string when it is not JSON).
pub async fn call(
    http: &reqwest::Client,
    method: &str,
    url: String,
    body: Option<Value>,
) -> (u16, Value) {
    call_with(http, method, url, body, None).await
}

/// [`call`], presenting a session's token in `x-seat-token` when one is given.
pub async fn call_with(
    http: &reqwest::Client,
    method: &str,
    url: String,
    body: Option<Value>,
    token: Option<&str>,
) -> (u16, Value) {
    let mut request = match method {
        "POST" => http.post(url),
        "GET" => http.get(url),
        "DELETE" => http.delete(url),
        _ => unreachable!("{method}"),
    };
    if let Some(body) = body {
        request = request.json(&body);
    }
    if let Some(token) = token {
        request = request.header("x-seat-token", token);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    let answer = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or(Value::String(text))
    };
    (status, answer)
}

/// POST `body` to `path` of a server started in the test ([`call`]).
pub async fn post_status(
    server: &dealgym::serve::Server,
    path: &str,
    body: &Value,
) -> (u16, Value) {
    let url = format!("{}{path}", server.base_url());
    call(&reqwest::Client::new(), "POST", url, Some(body.clone())).await
}

/// The `code` of a refusal's JSON body (`{"error":{"code","message"}}`), "" if none.
pub fn error_code(answer: &Value) -> &str {
    answer["error"]["code"].as_str().unwrap_or("")
}

/// The `message` of a refusal's JSON body, "" if none.
pub fn error_message(answer: &Value) -> &str {
    answer["error"]["message"].as_str().unwrap_or("")
}
