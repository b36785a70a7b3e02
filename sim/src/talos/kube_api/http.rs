//! HTTP/1.1 as the emulated API server speaks it: one request head read
//! off the connection, parsed into method, path and query, and one reply
//! written back with `Connection: close`; and the bodies kube-apiserver
//! answers with (plain text for health checks, JSON for the rest,
//! `metav1.Status` for failures).

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The most a request's head may take.
pub const MAX_HEAD: usize = 16 * 1024;

/// A request's head as read off the connection: complete, or too long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Head {
    Complete(Vec<u8>),
    TooLarge,
}

/// The most a request's body may take (kube-apiserver's limit is 3 MiB).
pub const MAX_BODY: usize = 3 * 1024 * 1024;

/// Reads one request head; None when the connection closes first.
pub async fn read_head<S: AsyncRead + Unpin>(stream: &mut S) -> std::io::Result<Option<Head>> {
    Ok(read_message(stream).await?.map(|(head, _)| head))
}

/// Reads one request head and what followed it on the connection.
async fn read_message<S: AsyncRead + Unpin>(
    stream: &mut S,
) -> std::io::Result<Option<(Head, Vec<u8>)>> {
    let mut head = Vec::new();
    let mut buffer = [0u8; 1024];
    loop {
        if let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = head.split_off(end + 4);
            return Ok(Some((Head::Complete(head), rest)));
        }
        if head.len() > MAX_HEAD {
            return Ok(Some((Head::TooLarge, Vec::new())));
        }
        let read = stream.read(&mut buffer).await?;
        if read == 0 {
            return Ok(None);
        }
        head.extend_from_slice(&buffer[..read]);
    }
}

/// Reads one request: its head and the body its `Content-Length` names
/// (none without one; chunked bodies are not read). Err is the reply to a
/// body that is too large or cut short.
pub async fn read_request<S: AsyncRead + Unpin>(
    stream: &mut S,
) -> std::io::Result<Option<(Head, Result<Vec<u8>, Reply>)>> {
    let Some((head, mut body)) = read_message(stream).await? else {
        return Ok(None);
    };
    let length = match parse(&head) {
        Ok(request) => request.content_length.unwrap_or(0),
        Err(_) => 0,
    };
    if length > MAX_BODY {
        let reply = Reply::status(413, "RequestEntityTooLarge", "request entity too large");
        return Ok(Some((head, Err(reply))));
    }
    let mut buffer = [0u8; 8192];
    while body.len() < length {
        let read = stream.read(&mut buffer).await?;
        if read == 0 {
            return Ok(Some((head, Err(Reply::text(400, "400 Bad Request")))));
        }
        body.extend_from_slice(&buffer[..read]);
    }
    body.truncate(length);
    Ok(Some((head, Ok(body))))
}

/// The parts of a request the server looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub query: &'a str,
    pub content_type: Option<&'a str>,
    pub content_length: Option<usize>,
    /// The `Host` header.
    pub host: Option<&'a str>,
}

impl Request<'_> {
    /// Whether the query has `name` (`?name`, `?name=…`).
    pub fn has_parameter(&self, name: &str) -> bool {
        self.query
            .split('&')
            .any(|p| p == name || p.split_once('=').is_some_and(|(n, _)| n == name))
    }
}

/// Parses a head as Go's HTTP server does before any handler runs: a
/// request line of three parts, HTTP/1.0 or 1.1, and a Host header on 1.1.
/// Err is the reply to such a malformed request.
pub fn parse(head: &Head) -> Result<Request<'_>, Reply> {
    let Head::Complete(bytes) = head else {
        return Err(Reply::text(431, "431 Request Header Fields Too Large"));
    };
    let bad = || Reply::text(400, "400 Bad Request");
    let text = std::str::from_utf8(bytes).map_err(|_| bad())?;
    let mut lines = text.split("\r\n");
    let mut parts = lines.next().unwrap_or_default().split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad());
    };
    if !version.starts_with("HTTP/") {
        return Err(bad());
    }
    if version != "HTTP/1.1" && version != "HTTP/1.0" {
        return Err(Reply::text(505, "505 HTTP Version Not Supported"));
    }
    let headers: Vec<(&str, &str)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim(), value.trim()))
        .collect();
    let header = |wanted: &str| {
        headers
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(wanted))
            .map(|(_, value)| *value)
    };
    let has_host = header("host").is_some();
    if version == "HTTP/1.1" && !has_host {
        return Err(Reply::text(
            400,
            "400 Bad Request: missing required Host header",
        ));
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let content_length = match header("content-length") {
        Some(text) => Some(text.parse::<usize>().map_err(|_| bad())?),
        None => None,
    };
    Ok(Request {
        method,
        path,
        query,
        content_type: header("content-type"),
        content_length,
        host: header("host"),
    })
}

/// An HTTP answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    pub body: String,
}

impl Reply {
    pub fn text(status: u16, body: impl Into<String>) -> Self {
        Self {
            status,
            content_type: "text/plain; charset=utf-8",
            body: body.into(),
        }
    }

    /// A JSON document, indented as kube-apiserver writes `/version`.
    pub fn json_indented(status: u16, body: &Value) -> Self {
        Self {
            status,
            content_type: "application/json",
            body: serde_json::to_string_pretty(body).unwrap_or_default(),
        }
    }

    /// A JSON document on one line with a trailing newline, as
    /// kube-apiserver encodes API objects (discovery documents, `Status`).
    pub fn json(status: u16, body: &Value) -> Self {
        Self {
            status,
            content_type: "application/json",
            body: format!("{body}\n"),
        }
    }

    /// A `metav1.Status` failure, as kube-apiserver answers errors; its
    /// NotFound and MethodNotAllowed carry empty `details`, its
    /// authentication failure none.
    pub fn status(code: u16, reason: &str, message: &str) -> Self {
        let mut status = serde_json::Map::new();
        status.insert("kind".into(), "Status".into());
        status.insert("apiVersion".into(), "v1".into());
        status.insert("metadata".into(), serde_json::json!({}));
        status.insert("status".into(), "Failure".into());
        status.insert("message".into(), message.into());
        status.insert("reason".into(), reason.into());
        if code != 401 {
            status.insert("details".into(), serde_json::json!({}));
        }
        status.insert("code".into(), code.into());
        Self::json(code, &Value::Object(status))
    }

    fn reason(&self) -> &'static str {
        match self.status {
            200 => "OK",
            201 => "Created",
            409 => "Conflict",
            413 => "Request Entity Too Large",
            415 => "Unsupported Media Type",
            422 => "Unprocessable Entity",
            400 => "Bad Request",
            401 => "Unauthorized",
            404 => "Not Found",
            405 => "Method Not Allowed",
            406 => "Not Acceptable",
            431 => "Request Header Fields Too Large",
            500 => "Internal Server Error",
            505 => "HTTP Version Not Supported",
            _ => "Unknown",
        }
    }
}

/// Writes the reply and closes the connection.
pub async fn write_reply<S: AsyncWrite + Unpin>(
    stream: &mut S,
    reply: &Reply,
) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {} {}\r\nCache-Control: no-cache, private\r\nContent-Type: {}\r\n\
         X-Content-Type-Options: nosniff\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        reply.status,
        reply.reason(),
        reply.content_type,
        reply.body.len(),
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(reply.body.as_bytes()).await?;
    stream.flush().await?;
    stream.shutdown().await
}
