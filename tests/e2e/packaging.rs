//! End-to-end tests of `scripts/package`: the archive it writes, and `terraform init`
//! installing the provider from the filesystem mirror and from the network mirror
//! (served over HTTPS on 127.0.0.1 with a test CA).

use crate::support;

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;
use support::{HttpsServer, PROVIDER_SOURCE, Workspace, hcl_string, provider_binary, repo_root};

const VERSION: &str = env!("CARGO_PKG_VERSION");
const PLATFORM: &str = "linux_amd64";

fn zip_name() -> String {
    format!("terraform-provider-hct_{VERSION}_{PLATFORM}.zip")
}

fn entry_name() -> String {
    format!("terraform-provider-hct_v{VERSION}")
}

fn mirror_dir(out: &Path, kind: &str) -> PathBuf {
    out.join(kind).join(PROVIDER_SOURCE)
}

fn sha256_hex(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&read(path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Runs `scripts/package --binary <provider> --out <out>` and returns its h1 hash
/// (from the network mirror's version file).
fn package(out: &Path) -> String {
    let script = repo_root().join("scripts/package");
    let result = Command::new(&script)
        .arg("--binary")
        .arg(provider_binary())
        .arg("--out")
        .arg(out)
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", script.display()));
    assert!(
        result.status.success(),
        "scripts/package failed ({})\n--- stdout ---\n{}\n--- stderr ---\n{}",
        result.status,
        String::from_utf8_lossy(&result.stdout),
        String::from_utf8_lossy(&result.stderr),
    );
    let version_json =
        read_json(&mirror_dir(out, "network-mirror").join(format!("{VERSION}.json")));
    let hashes = version_json["archives"][PLATFORM]["hashes"]
        .as_array()
        .expect("hashes array");
    hashes
        .iter()
        .filter_map(|h| h.as_str())
        .find(|h| h.starts_with("h1:"))
        .expect("an h1: hash")
        .to_string()
}

/// One entry of a zip's central directory.
#[derive(Debug)]
struct ZipEntry {
    name: String,
    made_by_os: u8,
    mode: u32,
    crc32: u32,
    size: u64,
}

/// Reads a zip's central directory (no zip64, no archive comment needed; enough
/// to check what scripts/package writes without a zip crate).
fn zip_entries(zip: &[u8]) -> Vec<ZipEntry> {
    let u16_at = |i: usize| u16::from_le_bytes([zip[i], zip[i + 1]]) as usize;
    let u32_at = |i: usize| u32::from_le_bytes(zip[i..i + 4].try_into().unwrap());
    let eocd = (0..=zip.len() - 22)
        .rev()
        .find(|&i| u32_at(i) == 0x0605_4b50)
        .expect("end of central directory record");
    let count = u16_at(eocd + 10);
    let mut at = u32_at(eocd + 16) as usize;
    let mut entries = Vec::new();
    for _ in 0..count {
        assert_eq!(
            u32_at(at),
            0x0201_4b50,
            "central directory header signature"
        );
        let name_len = u16_at(at + 28);
        entries.push(ZipEntry {
            made_by_os: zip[at + 5],
            crc32: u32_at(at + 16),
            size: u64::from(u32_at(at + 24)),
            mode: u32_at(at + 38) >> 16,
            name: String::from_utf8(zip[at + 46..at + 46 + name_len].to_vec()).unwrap(),
        });
        at += 46 + name_len + u16_at(at + 30) + u16_at(at + 32);
    }
    entries
}

fn crc32(data: &[u8]) -> u32 {
    let table: Vec<u32> = (0..256u32)
        .map(|mut c| {
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
            }
            c
        })
        .collect();
    !data.iter().fold(!0u32, |c, &b| {
        table[((c ^ u32::from(b)) & 0xff) as usize] ^ (c >> 8)
    })
}

/// The `version` and `hashes` recorded for `source` in a `.terraform.lock.hcl`.
fn lock_entry(lock: &str, source: &str) -> (String, Vec<String>) {
    let header = format!("provider \"{source}\" {{");
    let start = lock
        .find(&header)
        .unwrap_or_else(|| panic!("no {header} in lock file:\n{lock}"));
    let block = &lock[start..];
    let block = &block[..block.find("\n}").expect("end of provider block")];
    let quoted = |line: &str| line.split('"').nth(1).map(str::to_string);
    let version = block
        .lines()
        .find(|l| l.trim_start().starts_with("version "))
        .and_then(quoted)
        .unwrap_or_else(|| panic!("no version in:\n{block}"));
    let hashes = block
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("\"h1:") || l.starts_with("\"zh:"))
        .filter_map(quoted)
        .collect();
    (version, hashes)
}

const MAIN_TF: &str = r#"
terraform {
  required_providers {
    hct = {
      source  = "registry.hct.internal/hct/hct"
      version = "0.1.0"
    }
  }
}
"#;

/// After `terraform init`: checks the lock file and the installed binary.
fn check_installed(ws: &Workspace, h1: &str, what: &str) {
    let lock = ws.read(".terraform.lock.hcl");
    let (version, hashes) = lock_entry(&lock, PROVIDER_SOURCE);
    assert_eq!(version, VERSION, "{what}: locked version\n{lock}");
    assert!(
        hashes.iter().any(|h| h == h1),
        "{what}: lock lacks {h1}\n{lock}"
    );

    let installed = ws
        .path()
        .join(".terraform/providers")
        .join(PROVIDER_SOURCE)
        .join(VERSION)
        .join(PLATFORM)
        .join(entry_name());
    assert_eq!(
        read(&installed),
        read(&provider_binary()),
        "{what}: installed binary differs"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&installed).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o755, "{what}: installed binary mode {mode:o}");
    }
}

#[test]
fn package_writes_archive_checksums_and_mirrors() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path();
    let h1 = package(out);
    let binary = read(&provider_binary());

    // The archive: one executable entry with the binary's size and CRC.
    let zip_path = out.join(zip_name());
    let zip = read(&zip_path);
    let entries = zip_entries(&zip);
    assert_eq!(entries.len(), 1, "{entries:?}");
    let entry = &entries[0];
    assert_eq!(entry.name, entry_name());
    assert_eq!(
        entry.made_by_os, 3,
        "zip entry must be made by Unix for its mode to count"
    );
    assert_eq!(entry.mode, 0o100755, "zip entry mode {:o}", entry.mode);
    assert_eq!(entry.size, binary.len() as u64);
    assert_eq!(entry.crc32, crc32(&binary), "zip entry CRC-32");

    // The registry manifest is a copy of the repo's.
    let manifest_name = format!("terraform-provider-hct_{VERSION}_manifest.json");
    let manifest = read_json(&out.join(&manifest_name));
    assert_eq!(
        manifest,
        read_json(&repo_root().join("terraform-registry-manifest.json"))
    );
    assert_eq!(
        manifest["metadata"]["protocol_versions"],
        serde_json::json!(["6.0"])
    );

    // SHA256SUMS: "<hex>  <name>" for exactly the zip and the manifest.
    let sums = String::from_utf8(read(
        &out.join(format!("terraform-provider-hct_{VERSION}_SHA256SUMS")),
    ))
    .unwrap();
    let mut names = Vec::new();
    for line in sums.lines() {
        let (digest, name) = line
            .split_once("  ")
            .unwrap_or_else(|| panic!("bad line {line:?}"));
        assert_eq!(
            digest,
            sha256_hex(&read(&out.join(name))),
            "SHA256SUMS entry for {name}"
        );
        names.push(name.to_string());
    }
    names.sort();
    assert_eq!(names, vec![zip_name(), manifest_name]);

    // Filesystem mirror (packed layout) and network mirror hold the same zip.
    let fs = mirror_dir(out, "filesystem-mirror");
    assert_eq!(read(&fs.join(zip_name())), zip, "filesystem mirror zip");
    let nm = mirror_dir(out, "network-mirror");
    assert_eq!(read(&nm.join(zip_name())), zip, "network mirror zip");
    assert_eq!(
        read_json(&nm.join("index.json")),
        serde_json::json!({"versions": {VERSION: {}}})
    );
    let archive = &read_json(&nm.join(format!("{VERSION}.json")))["archives"][PLATFORM];
    assert_eq!(archive["url"], zip_name());
    let zh = format!("zh:{}", sha256_hex(&zip));
    assert_eq!(archive["hashes"], serde_json::json!([h1, zh]));
}

#[test]
fn init_installs_from_filesystem_mirror() {
    let tmp = tempfile::tempdir().unwrap();
    let h1 = package(tmp.path());
    let mirror = tmp.path().join("filesystem-mirror");
    let config = format!(
        "provider_installation {{\n  filesystem_mirror {{\n    path = {}\n  }}\n}}\n",
        hcl_string(mirror.to_str().unwrap())
    );
    let ws = Workspace::with_cli_config(&[("main.tf", MAIN_TF)], &config);
    let what = "terraform init from the filesystem mirror";
    ws.terraform(&["init"]).expect_success(what);
    check_installed(&ws, &h1, what);
}

#[test]
fn init_installs_from_network_mirror_over_https() {
    let tmp = tempfile::tempdir().unwrap();
    let h1 = package(tmp.path());
    let server = HttpsServer::start(&tmp.path().join("network-mirror"));
    let config = format!(
        "provider_installation {{\n  network_mirror {{\n    url = {}\n  }}\n}}\n",
        hcl_string(server.url())
    );
    let mut ws = Workspace::with_cli_config(&[("main.tf", MAIN_TF)], &config);
    ws.env("SSL_CERT_FILE", server.ca_pem.to_str().unwrap());
    let what = "terraform init from the network mirror";
    let out = ws.terraform(&["init"]);
    let log = server.access_log();
    assert!(
        out.success(),
        "{what} failed ({})\n{out}\n--- access log ---\n{log}",
        out.status
    );
    check_installed(&ws, &h1, what);
    // The mirror's hashes matched the archive Terraform downloaded.
    assert!(out.stdout.contains("(verified checksum)"), "{out}");
    for path in ["index.json", &format!("{VERSION}.json"), &zip_name()] {
        assert!(
            log.contains(&format!("GET /{PROVIDER_SOURCE}/{path} ")),
            "no GET of {path}:\n{log}"
        );
    }
}
