//! An S3-compatible bucket where snapshots and their facts are kept
//! (Hetzner Object Storage, `https://<location>.your-objectstorage.com`, or
//! any other S3 server): objects put from a local file, read back into one,
//! listed. Every request is signed with AWS SigV4 (a URL presigned for a few
//! minutes, by rusty-s3) and sent with reqwest: virtual-hosted
//! (`<bucket>.<location>.your-objectstorage.com`, the form Hetzner gives its
//! buckets) to Hetzner, path-style to an endpoint the user names (what
//! self-hosted S3 servers take).
//!
//! The keys never leave this file: a signed URL names the access key's id,
//! so no URL goes into an error or a log (reqwest's errors are stripped of
//! theirs), and the `Debug` of a [`Bucket`] shows neither key.

use std::path::Path;
use std::time::Duration;

use rusty_s3::actions::{GetObject, ListObjectsV2, ListObjectsV2Response, PutObject, S3Action};
use rusty_s3::{Credentials, UrlStyle};
use tokio::io::AsyncWriteExt;
use url::Url;

use super::BackupError;
use crate::secret::Secret;

/// How long a signed request is good for (to start, not to finish).
const SIGNED_FOR: Duration = Duration::from_secs(300);
/// Each small request (a listing, facts), whole. Uploads and downloads
/// of snapshots have no limit of their own: the runbook bounds each
/// attempt by the apply's deadline; a download also stops when no bytes
/// come for this long.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// A bucket as the configuration names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketConfig {
    pub endpoint: Url,
    pub name: String,
    /// The SigV4 region: Hetzner's location (`fsn1`).
    pub region: String,
    /// `https://<endpoint>/<bucket>/<key>` rather than
    /// `https://<bucket>.<endpoint>/<key>`.
    pub path_style: bool,
    /// Put before every key: `<cluster>/` unless set.
    pub prefix: String,
    pub access_key: Secret,
    pub secret_key: Secret,
}

/// Hetzner Object Storage's endpoint for a location.
pub fn hetzner_endpoint(location: &str) -> String {
    format!("https://{location}.your-objectstorage.com")
}

/// An object of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// Its key, the prefix included.
    pub key: String,
    pub bytes: u64,
    /// As the server says it (RFC 3339).
    pub last_modified: String,
}

/// A bucket to talk to; cheap to clone.
#[derive(Clone)]
pub struct Bucket(std::sync::Arc<Inner>);

struct Inner {
    s3: rusty_s3::Bucket,
    credentials: Credentials,
    name: String,
    prefix: String,
    http: reqwest::Client,
}

impl std::fmt::Debug for Bucket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bucket")
            .field("name", &self.0.name)
            .field("prefix", &self.0.prefix)
            .finish_non_exhaustive()
    }
}

impl Bucket {
    pub fn open(config: &BucketConfig) -> Result<Self, BackupError> {
        let invalid = |reason: String| BackupError::Bucket {
            bucket: config.name.clone(),
            key: String::new(),
            reason,
            transient: false,
        };
        let s3 = rusty_s3::Bucket::new(
            config.endpoint.clone(),
            if config.path_style {
                UrlStyle::Path
            } else {
                UrlStyle::VirtualHost
            },
            config.name.clone(),
            config.region.clone(),
        )
        .map_err(|e| invalid(format!("not a bucket: {e}")))?;
        let http = crate::net::http_client()
            // A signed URL names the access key's id: it is sent to the
            // server named and nowhere else (no redirect, no Referer).
            .redirect(reqwest::redirect::Policy::none())
            .referer(false)
            .build()
            .map_err(|e| invalid(e.without_url().to_string()))?;
        Ok(Self(std::sync::Arc::new(Inner {
            s3,
            credentials: Credentials::new(
                config.access_key.expose().to_string(),
                config.secret_key.expose().to_string(),
            ),
            name: config.name.clone(),
            prefix: config.prefix.clone(),
            http,
        })))
    }

    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// The key of `name` under the prefix.
    pub fn key(&self, name: &str) -> String {
        format!("{}{name}", self.0.prefix)
    }

    /// `s3://<bucket>/<key>`: how state and logs name an object.
    pub fn location(&self, key: &str) -> String {
        format!("s3://{}/{key}", self.0.name)
    }

    fn error(&self, key: &str, reason: impl Into<String>) -> BackupError {
        self.failed(key, reason.into(), false)
    }

    fn failed(&self, key: &str, reason: String, transient: bool) -> BackupError {
        BackupError::Bucket {
            bucket: self.0.name.clone(),
            key: key.to_string(),
            reason,
            transient,
        }
    }

    /// No answer (or half of one): the network's or the server's trouble.
    /// The URL (it names the access key's id) is left out; the causes,
    /// which name none, are kept.
    fn transport(&self, key: &str, e: reqwest::Error) -> BackupError {
        let e = e.without_url();
        let mut reason = e.to_string();
        let mut cause = std::error::Error::source(&e);
        while let Some(inner) = cause {
            reason.push_str(&format!(": {inner}"));
            cause = inner.source();
        }
        self.failed(key, reason, true)
    }

    /// Puts the file at `path` as `key`.
    pub async fn put_file(&self, key: &str, path: &Path) -> Result<(), BackupError> {
        let file = tokio::fs::File::open(path)
            .await
            .map_err(|source| BackupError::Io {
                path: path.to_path_buf(),
                source,
            })?;
        let length = file
            .metadata()
            .await
            .map_err(|source| BackupError::Io {
                path: path.to_path_buf(),
                source,
            })?
            .len();
        let body = reqwest::Body::wrap_stream(tokio_util::io::ReaderStream::new(file));
        self.put(key, body, length).await
    }

    /// Puts `bytes` as `key`.
    pub async fn put_bytes(&self, key: &str, bytes: Vec<u8>) -> Result<(), BackupError> {
        let length = bytes.len() as u64;
        self.put(key, reqwest::Body::from(bytes), length).await
    }

    async fn put(&self, key: &str, body: reqwest::Body, length: u64) -> Result<(), BackupError> {
        let url = PutObject::new(&self.0.s3, Some(&self.0.credentials), key).sign(SIGNED_FOR);
        let response = self
            .0
            .http
            .put(url)
            // S3 takes no body of unknown length.
            .header(reqwest::header::CONTENT_LENGTH, length)
            .header(reqwest::header::CONTENT_TYPE, "application/octet-stream")
            .body(body)
            .send()
            .await
            .map_err(|e| self.transport(key, e))?;
        self.check(key, response).await.map(drop)
    }

    /// A signed GET (`timeout` for the whole answer, unless it streams a
    /// large object): the answer, None on 404, else the server's error.
    async fn fetch(
        &self,
        url: Url,
        key: &str,
        timeout: Option<Duration>,
    ) -> Result<Option<reqwest::Response>, BackupError> {
        let mut request = self.0.http.get(url);
        if let Some(timeout) = timeout {
            request = request.timeout(timeout);
        }
        let response = request.send().await.map_err(|e| self.transport(key, e))?;
        if response.status() == reqwest::StatusCode::NOT_FOUND {
            // No such object; a missing bucket is an error.
            let said = self.check(key, response).await.unwrap_err();
            return match &said {
                BackupError::Bucket { reason, .. } if reason.contains("NoSuchBucket") => Err(said),
                _ => Ok(None),
            };
        }
        self.check(key, response).await.map(Some)
    }

    fn object_url(&self, key: &str) -> Url {
        GetObject::new(&self.0.s3, Some(&self.0.credentials), key).sign(SIGNED_FOR)
    }

    /// Writes the object `key` into a new file at `to`; false when there is
    /// no such object.
    pub async fn download(&self, key: &str, to: &Path) -> Result<bool, BackupError> {
        let Some(mut response) = self.fetch(self.object_url(key), key, None).await? else {
            return Ok(false);
        };
        let io = |source| BackupError::Io {
            path: to.to_path_buf(),
            source,
        };
        let mut options = tokio::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        options.mode(0o600);
        let mut file = options.open(to).await.map_err(io)?;
        loop {
            let next = tokio::time::timeout(REQUEST_TIMEOUT, response.chunk())
                .await
                .map_err(|_| self.failed(key, "no bytes for 60 s".to_string(), true))?;
            match next.map_err(|e| self.transport(key, e))? {
                Some(chunk) => file.write_all(&chunk).await.map_err(io)?,
                None => break,
            }
        }
        file.flush().await.map_err(io)?;
        Ok(true)
    }

    /// The object `key`, whole (small objects: facts); None when missing.
    pub async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, BackupError> {
        let url = self.object_url(key);
        let Some(response) = self.fetch(url, key, Some(REQUEST_TIMEOUT)).await? else {
            return Ok(None);
        };
        let bytes = response.bytes().await.map_err(|e| self.transport(key, e))?;
        Ok(Some(bytes.to_vec()))
    }

    /// One page of the objects under the prefix (at most `max` of them).
    async fn page(
        &self,
        token: Option<&str>,
        max: Option<usize>,
    ) -> Result<ListObjectsV2Response, BackupError> {
        let prefix = self.0.prefix.as_str();
        let mut action = ListObjectsV2::new(&self.0.s3, Some(&self.0.credentials));
        action.with_prefix(prefix);
        if let Some(token) = token {
            action.with_continuation_token(token);
        }
        if let Some(max) = max {
            action.with_max_keys(max);
        }
        let answer = self
            .fetch(action.sign(SIGNED_FOR), prefix, Some(REQUEST_TIMEOUT))
            .await?
            .ok_or_else(|| self.error(prefix, "no such bucket (HTTP 404)"))?;
        let text = answer.text().await.map_err(|e| self.transport(prefix, e))?;
        ListObjectsV2::parse_response(&text)
            .map_err(|e| self.error(prefix, format!("not a ListObjectsV2 answer: {e}")))
    }

    /// Whether the keys may list the bucket under the prefix: one cheap
    /// signed request, made before a snapshot is streamed (a server that
    /// refuses an upload may close the connection before it can say why).
    pub async fn check_access(&self) -> Result<(), BackupError> {
        self.page(None, Some(1)).await.map(drop)
    }

    /// Every object under the prefix, page after page.
    pub async fn list(&self) -> Result<Vec<Listed>, BackupError> {
        let mut found = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let page = self.page(token.as_deref(), None).await?;
            found.extend(page.contents.into_iter().map(|object| Listed {
                key: object.key,
                bytes: object.size.unwrap_or_default(),
                last_modified: object.last_modified.unwrap_or_default(),
            }));
            match page.next_continuation_token {
                Some(next) if !next.is_empty() => token = Some(next),
                _ => return Ok(found),
            }
        }
    }

    /// A 2xx answer, or the error the server gave (its S3 code and message).
    async fn check(
        &self,
        key: &str,
        response: reqwest::Response,
    ) -> Result<reqwest::Response, BackupError> {
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let body = response.text().await.unwrap_or_default();
        let field = |name: &str| {
            let open = format!("<{name}>");
            let start = body.find(&open)? + open.len();
            let end = body[start..].find(&format!("</{name}>"))? + start;
            Some(body[start..end].to_string())
        };
        let said = match (field("Code"), field("Message")) {
            (Some(code), Some(message)) => format!("{code}: {message}"),
            (Some(code), None) => code,
            _ => "no S3 error in the answer".to_string(),
        };
        let transient =
            status.is_server_error() || status == reqwest::StatusCode::TOO_MANY_REQUESTS;
        Err(self.failed(key, format!("HTTP {status}, {said}"), transient))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> BucketConfig {
        BucketConfig {
            endpoint: Url::parse(&hetzner_endpoint("fsn1")).unwrap(),
            name: "backups".into(),
            region: "fsn1".into(),
            path_style: false,
            prefix: "demo/".into(),
            access_key: Secret::new("AKIDNOTSHOWN"),
            secret_key: Secret::new("SECRETNOTSHOWN"),
        }
    }

    #[test]
    fn keys_and_locations_carry_the_prefix_and_no_credential() {
        let bucket = Bucket::open(&config()).unwrap();
        let key = bucket.key("demo-20261207T045012Z-pre-change.etcd.age");
        assert_eq!(key, "demo/demo-20261207T045012Z-pre-change.etcd.age");
        assert_eq!(
            bucket.location(&key),
            "s3://backups/demo/demo-20261207T045012Z-pre-change.etcd.age"
        );
        let shown = format!("{bucket:?} {:?}", config());
        assert!(!shown.contains("AKIDNOTSHOWN"), "{shown}");
        assert!(!shown.contains("SECRETNOTSHOWN"), "{shown}");
    }

    #[test]
    fn requests_are_signed_virtual_hosted_to_hetzner_and_path_style_elsewhere() {
        let url = |config: &BucketConfig| {
            let bucket = Bucket::open(config).unwrap();
            PutObject::new(&bucket.0.s3, Some(&bucket.0.credentials), "demo/x").sign(SIGNED_FOR)
        };
        let hetzner = url(&config());
        assert_eq!(
            hetzner.host_str(),
            Some("backups.fsn1.your-objectstorage.com")
        );
        assert_eq!(hetzner.path(), "/demo/x");
        let query = hetzner.query().unwrap_or_default();
        assert!(query.contains("X-Amz-Signature="), "{query}");
        assert!(query.contains("%2Ffsn1%2Fs3%2Faws4_request"), "{query}");
        let elsewhere = url(&BucketConfig {
            endpoint: Url::parse("http://127.0.0.1:9000").unwrap(),
            path_style: true,
            ..config()
        });
        assert_eq!(elsewhere.host_str(), Some("127.0.0.1"));
        assert_eq!(elsewhere.path(), "/backups/demo/x");
    }

    /// A server on loopback that answers every request with `status` and
    /// an S3 error body; its address.
    async fn answering(status: &'static str) -> String {
        use tokio::io::AsyncReadExt;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let mut request = [0u8; 4096];
                let _ = socket.read(&mut request).await;
                let body = "<Error><Code>SlowDown</Code><Message>later</Message></Error>";
                let answer = format!(
                    "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(answer.as_bytes()).await;
            }
        });
        format!("http://{address}")
    }

    /// What `check_access` says of the server at `endpoint` (path-style).
    async fn access_error(endpoint: &str) -> BackupError {
        let config = BucketConfig {
            endpoint: Url::parse(endpoint).unwrap(),
            path_style: true,
            ..config()
        };
        Bucket::open(&config)
            .unwrap()
            .check_access()
            .await
            .unwrap_err()
    }

    #[tokio::test]
    async fn server_errors_are_worth_another_attempt_and_refusals_are_not() {
        for (status, transient) in [("503 Service Unavailable", true), ("403 Forbidden", false)] {
            let error = access_error(&answering(status).await).await;
            assert_eq!(error.is_transient(), transient, "{status}: {error}");
            let text = error.to_string();
            assert!(text.contains("SlowDown: later"), "{text}");
            assert!(
                !text.contains("AKIDNOTSHOWN") && !text.contains("X-Amz"),
                "{text}"
            );
        }
        // Nobody listening: transient, and no URL in the error.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let error = access_error(&format!("http://127.0.0.1:{port}")).await;
        assert!(error.is_transient(), "{error}");
        assert!(!error.to_string().contains("AKIDNOTSHOWN"), "{error}");
    }
}
