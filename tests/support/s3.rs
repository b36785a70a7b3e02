//! A real S3-compatible server for the backup tests: Versity's S3 gateway
//! (`versitygw`, built by scripts/ensure-peers) on loopback, serving a
//! directory (its posix backend: an object is a file under
//! `<root>/<bucket>/`), checking every request's SigV4 signature. The
//! tests read what hct put there from the directory itself, not through
//! hct's client.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The keys the server takes; any other signature is refused.
pub const ACCESS_KEY: &str = "HCTTESTACCESSKEY0001";
pub const SECRET_KEY: &str = "hct-test-secret-key-never-logged-0001";
pub const REGION: &str = "fsn1";

pub struct S3Server {
    child: Child,
    root: tempfile::TempDir,
    pub endpoint: String,
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl S3Server {
    /// Starts the server with one empty bucket, `bucket`.
    pub async fn start(bucket: &str) -> Self {
        let binary = crate::peers::peers().path("VERSITYGW");
        let root = tempfile::tempdir().expect("a directory for the S3 server");
        let port = {
            let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
            probe.local_addr().unwrap().port()
        };
        let child = Command::new(&binary)
            .args(["--port", &format!("127.0.0.1:{port}")])
            .args([
                "--access", ACCESS_KEY, "--secret", SECRET_KEY, "--region", REGION,
            ])
            .arg("posix")
            .arg(root.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("{}: {e}", binary.display()));
        let server = Self {
            child,
            root,
            endpoint: format!("http://127.0.0.1:{port}"),
        };
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "versitygw did not listen on port {port}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        server.create_bucket(bucket).await;
        server
    }

    async fn create_bucket(&self, name: &str) {
        use rusty_s3::S3Action;
        let bucket = rusty_s3::Bucket::new(
            self.endpoint.parse().unwrap(),
            rusty_s3::UrlStyle::Path,
            name.to_string(),
            REGION.to_string(),
        )
        .unwrap();
        let credentials = rusty_s3::Credentials::new(ACCESS_KEY, SECRET_KEY);
        let url = rusty_s3::actions::CreateBucket::new(&bucket, &credentials)
            .sign(Duration::from_secs(60));
        let _ = rustls::crypto::ring::default_provider().install_default();
        let response = reqwest::Client::new()
            .put(url)
            .header(reqwest::header::CONTENT_LENGTH, 0)
            .send()
            .await
            .expect("CreateBucket");
        let status = response.status();
        assert!(
            status.is_success(),
            "CreateBucket {name}: {status} {}",
            response.text().await.unwrap_or_default()
        );
    }

    /// The objects of `bucket` under `prefix`, by key, as the server keeps
    /// them.
    pub fn objects(&self, bucket: &str, prefix: &str) -> Vec<(String, PathBuf)> {
        let dir = self.root.path().join(bucket);
        let mut found = Vec::new();
        walk(&dir, &dir, &mut found);
        found.retain(|(key, _)| key.starts_with(prefix));
        found.sort();
        found
    }

    pub fn root(&self) -> &Path {
        self.root.path()
    }
}

fn walk(base: &Path, dir: &Path, found: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            walk(base, &path, found);
        } else {
            let key = path
                .strip_prefix(base)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            // The server's own bookkeeping.
            if !key.starts_with(".sgwtmp") {
                found.push((key, path));
            }
        }
    }
}
