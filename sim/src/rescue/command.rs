//! What the emulated rescue system accepts over SSH: the one command hct
//! runs to write a Talos image to the disk. Nothing is executed; the
//! command is split like a shell would split it and its shape is checked:
//!
//! ```sh
//! set -euo pipefail
//! printf '%s' '<schematic YAML>' | curl -fsS -X POST --data-binary @- '<factory>/schematics' >/dev/null
//! curl -fsSL '<factory>/image/<64 hex>/<vX.Y.Z>/hcloud-<arch>.raw.xz' | xz -d | dd of=/dev/sda bs=4M …
//! sync
//! ```
//!
//! Statements may be separated by `;`, `&&` or newlines. The schematic
//! registration is optional, as on the real Image Factory, only for the
//! schematic without customization (which the factory always knows); any
//! other schematic must be registered first, with YAML whose SHA-256 is
//! the schematic ID in the image URL.

use sha2::{Digest, Sha256};

/// The disk of a Hetzner cloud server, as the rescue system sees it.
pub const DISK: &str = "/dev/sda";

/// The schematic without customization, which the factory always serves.
pub const DEFAULT_SCHEMATIC: &str = crate::seed::TALOS_SCHEMATIC;

/// A well-formed image write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteRequest {
    pub image_url: String,
    /// `https://factory.talos.dev` (no trailing slash).
    pub factory: String,
    /// The full 64-hex schematic ID.
    pub schematic: String,
    /// `v1.12.6`
    pub version: String,
    /// `amd64` or `arm64`
    pub arch: String,
    /// Whether the command registered the schematic with the factory first.
    pub registered: bool,
}

/// Why a command is refused: what the rescue shell would print, and its
/// exit status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub status: u32,
    pub stderr: String,
}

impl Refusal {
    fn shape(why: impl Into<String>) -> Self {
        Self {
            status: 2,
            stderr: format!("hct-sim rescue: {}\n", why.into()),
        }
    }
}

/// Checks `command`; returns what it would write to the disk.
pub fn check(command: &str) -> Result<WriteRequest, Refusal> {
    let statements = parse(command).map_err(Refusal::shape)?;
    let Some((first, rest)) = statements.split_first() else {
        return Err(Refusal::shape("empty command"));
    };
    check_strict_mode(first)?;
    let Some((last, middle)) = rest.split_last() else {
        return Err(Refusal::shape("nothing after `set -euo pipefail`"));
    };
    if last.as_slice() != [vec!["sync".to_string()]] {
        return Err(Refusal::shape(
            "the command must end with `sync`, so the image is on the disk before the snapshot",
        ));
    }
    let (registration, write) = match middle {
        [write] => (None, write),
        [register, write] => (Some(register), write),
        _ => {
            return Err(Refusal::shape(format!(
                "expected an optional schematic registration and one write pipeline between \
                 `set -euo pipefail` and `sync`, found {} statements",
                middle.len()
            )));
        }
    };
    let mut request = check_write(write)?;
    match registration {
        Some(register) => {
            let (factory, yaml) = check_registration(register)?;
            if factory != request.factory {
                return Err(Refusal::shape(format!(
                    "the schematic is registered with {factory} but the image comes from {}",
                    request.factory
                )));
            }
            let id = hex(&Sha256::digest(yaml.as_bytes()));
            if id != request.schematic {
                // What the factory answers when the image's schematic is unknown to it.
                return Err(not_found(
                    &request.image_url,
                    &format!(
                        "the registered schematic has ID {id}, the image URL asks for {}",
                        request.schematic
                    ),
                ));
            }
            request.registered = true;
        }
        None if request.schematic != DEFAULT_SCHEMATIC => {
            return Err(not_found(
                &request.image_url,
                "schematic not registered with the factory",
            ));
        }
        None => {}
    }
    Ok(request)
}

/// The answer of curl -f when the factory does not know the schematic.
fn not_found(url: &str, why: &str) -> Refusal {
    Refusal {
        status: 22,
        stderr: format!("curl: (22) The requested URL returned error: 404 ({url}: {why})\n"),
    }
}

fn check_strict_mode(statement: &[Vec<String>]) -> Result<(), Refusal> {
    let refuse = || {
        Refusal::shape(
            "the command must start with `set -euo pipefail`, so a failed download or write \
             fails the whole command",
        )
    };
    let [words] = statement else {
        return Err(refuse());
    };
    let Some((set, args)) = words.split_first() else {
        return Err(refuse());
    };
    if set != "set" {
        return Err(refuse());
    }
    let (mut errexit, mut nounset, mut pipefail) = (false, false, false);
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let Some(flags) = arg.strip_prefix('-') else {
            return Err(refuse());
        };
        for flag in flags.chars() {
            match flag {
                'e' => errexit = true,
                'u' => nounset = true,
                'o' => pipefail |= args.next().is_some_and(|o| o == "pipefail"),
                _ => {}
            }
        }
    }
    if errexit && nounset && pipefail {
        Ok(())
    } else {
        Err(refuse())
    }
}

/// `curl -f … URL | xz -d | dd of=/dev/sda bs=…`
fn check_write(pipeline: &[Vec<String>]) -> Result<WriteRequest, Refusal> {
    let [download, decompress, write] = pipeline else {
        return Err(Refusal::shape(
            "the write must be one pipeline: download | xz -d | dd of=/dev/sda",
        ));
    };
    let url = check_download(download)?;
    let is_xz = match decompress.as_slice() {
        [xz, flags @ ..] if xz == "xz" => flags.iter().any(|f| {
            f == "--decompress" || (f.starts_with('-') && !f.starts_with("--") && f.contains('d'))
        }),
        [unxz, ..] => unxz == "unxz",
        [] => false,
    };
    if !is_xz {
        return Err(Refusal::shape(format!(
            "the image is xz-compressed; the second stage must be `xz -d`, not `{}`",
            decompress.join(" ")
        )));
    }
    match write.split_first() {
        Some((dd, args)) if dd == "dd" => {
            let target = args.iter().find_map(|a| a.strip_prefix("of="));
            if target != Some(DISK) {
                return Err(Refusal::shape(format!(
                    "dd must write to the server's disk (of={DISK}), not {}",
                    target.unwrap_or("standard output")
                )));
            }
            if !args.iter().any(|a| a.starts_with("bs=")) {
                return Err(Refusal::shape(
                    "dd without bs= writes 512-byte blocks: give a block size such as bs=4M",
                ));
            }
        }
        _ => {
            return Err(Refusal::shape(format!(
                "the last stage must be `dd of={DISK}`, not `{}`",
                write.join(" ")
            )));
        }
    }
    parse_image_url(&url).map_err(Refusal::shape)
}

/// The URL of a downloader that fails on HTTP errors (curl -f, wget).
fn check_download(words: &[String]) -> Result<String, Refusal> {
    let Some((tool, args)) = words.split_first() else {
        return Err(Refusal::shape("empty download stage"));
    };
    let urls: Vec<&String> = args
        .iter()
        .filter(|a| a.starts_with("https://") || a.starts_with("http://"))
        .collect();
    let [url] = urls.as_slice() else {
        return Err(Refusal::shape(format!(
            "the download stage must name exactly one URL, found {}",
            urls.len()
        )));
    };
    match tool.as_str() {
        "curl" => {
            let fails = args.iter().any(|a| {
                a == "--fail" || (a.starts_with('-') && !a.starts_with("--") && a.contains('f'))
            });
            if !fails {
                return Err(Refusal::shape(
                    "curl without -f pipes an HTTP error page into xz: use curl -f",
                ));
            }
        }
        "wget" => {}
        other => {
            return Err(Refusal::shape(format!(
                "the download stage must be curl or wget, not {other}"
            )));
        }
    }
    Ok(url.to_string())
}

/// `printf '%s' YAML | curl -f … -X POST --data-binary @- FACTORY/schematics`
fn check_registration(pipeline: &[Vec<String>]) -> Result<(String, String), Refusal> {
    let [printf, curl] = pipeline else {
        return Err(Refusal::shape(
            "the schematic registration must be `printf '%s' YAML | curl -X POST --data-binary @- FACTORY/schematics`",
        ));
    };
    let yaml = match printf.as_slice() {
        [p, format, yaml] if p == "printf" && format == "%s" => yaml.clone(),
        _ => {
            return Err(Refusal::shape(format!(
                "the schematic must be printed verbatim with printf '%s', not `{}`",
                printf.join(" ")
            )));
        }
    };
    let url = check_download(curl)?;
    let posts = curl.windows(2).any(|w| w[0] == "-X" && w[1] == "POST")
        && curl
            .windows(2)
            .any(|w| w[0] == "--data-binary" && w[1] == "@-");
    if !posts {
        return Err(Refusal::shape(
            "the registration must POST the schematic from standard input (-X POST --data-binary @-)",
        ));
    }
    let factory = url
        .strip_suffix("/schematics")
        .ok_or_else(|| Refusal::shape(format!("{url} is not a factory's /schematics endpoint")))?;
    Ok((factory.to_string(), yaml))
}

/// Splits `<factory>/image/<64 hex>/<vX.Y.Z>/hcloud-<arch>.raw.xz`.
pub fn parse_image_url(url: &str) -> Result<WriteRequest, String> {
    let bad = |why: &str| {
        format!(
            "{url} is not a factory image URL (<factory>/image/<schematic>/<vX.Y.Z>/hcloud-<amd64|arm64>.raw.xz): {why}"
        )
    };
    let (factory, rest) = url.split_once("/image/").ok_or_else(|| bad("no /image/"))?;
    let host = factory
        .strip_prefix("https://")
        .or_else(|| factory.strip_prefix("http://"))
        .ok_or_else(|| bad("not http(s)"))?;
    if host.is_empty() {
        return Err(bad("no host"));
    }
    let parts: Vec<&str> = rest.split('/').collect();
    let [schematic, version, file] = parts.as_slice() else {
        return Err(bad("wrong number of path segments"));
    };
    if schematic.len() != 64
        || !schematic
            .chars()
            .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
    {
        return Err(bad("the schematic is not 64 lowercase hex digits"));
    }
    let numbers: Vec<&str> = version
        .strip_prefix('v')
        .map(|v| v.split('.').collect())
        .unwrap_or_default();
    if numbers.len() != 3
        || numbers
            .iter()
            .any(|n| n.is_empty() || !n.chars().all(|c| c.is_ascii_digit()))
    {
        return Err(bad("the version is not vX.Y.Z"));
    }
    let arch = file
        .strip_prefix("hcloud-")
        .and_then(|f| f.strip_suffix(".raw.xz"))
        .filter(|a| matches!(*a, "amd64" | "arm64"))
        .ok_or_else(|| bad("the file is not hcloud-amd64.raw.xz or hcloud-arm64.raw.xz"))?;
    Ok(WriteRequest {
        image_url: url.to_string(),
        factory: factory.to_string(),
        schematic: schematic.to_string(),
        version: version.to_string(),
        arch: arch.to_string(),
        registered: false,
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Splits a command into statements (`;`, `&&`, newline), each a pipeline
/// (`|`) of commands, each a list of words, with shell quoting removed:
/// single quotes, double quotes (`\"`, `\\`, `\$` and `` \` `` escapes) and
/// backslashes. Expansions (`$…`, backticks), subshells, `||` and
/// here-documents are refused: hct never sends them.
pub fn parse(command: &str) -> Result<Vec<Vec<Vec<String>>>, String> {
    let mut statements: Vec<Vec<Vec<String>>> = Vec::new();
    let mut pipeline: Vec<Vec<String>> = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = command.chars().peekable();

    fn end_word(word: &mut Option<String>, words: &mut Vec<String>) {
        if let Some(w) = word.take() {
            words.push(w);
        }
    }
    fn end_command(
        word: &mut Option<String>,
        words: &mut Vec<String>,
        pipeline: &mut Vec<Vec<String>>,
    ) -> Result<(), String> {
        end_word(word, words);
        if words.is_empty() {
            return Err("empty command in a pipeline".into());
        }
        pipeline.push(std::mem::take(words));
        Ok(())
    }
    fn end_statement(
        word: &mut Option<String>,
        words: &mut Vec<String>,
        pipeline: &mut Vec<Vec<String>>,
        statements: &mut Vec<Vec<Vec<String>>>,
    ) -> Result<(), String> {
        end_word(word, words);
        if words.is_empty() && pipeline.is_empty() {
            return Ok(()); // blank statement, e.g. a trailing `;`
        }
        end_command(word, words, pipeline)?;
        statements.push(std::mem::take(pipeline));
        Ok(())
    }

    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => w.push(c),
                        None => return Err("unterminated single quote".into()),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(e @ ('"' | '\\' | '$' | '`')) => w.push(e),
                            Some(other) => {
                                w.push('\\');
                                w.push(other);
                            }
                            None => return Err("unterminated double quote".into()),
                        },
                        Some('$' | '`') => {
                            return Err("expansions ($, `) are not supported".into());
                        }
                        Some(c) => w.push(c),
                        None => return Err("unterminated double quote".into()),
                    }
                }
            }
            '\\' => match chars.next() {
                Some('\n') => {}
                Some(c) => word.get_or_insert_with(String::new).push(c),
                None => return Err("trailing backslash".into()),
            },
            '$' | '`' | '(' | ')' => {
                return Err(format!("`{c}` (expansions, subshells) is not supported"));
            }
            '<' if chars.peek() == Some(&'<') => {
                return Err("here-documents are not supported".into());
            }
            ' ' | '\t' => end_word(&mut word, &mut words),
            '|' => {
                if chars.peek() == Some(&'|') {
                    return Err("`||` is not supported: a failure must fail the command".into());
                }
                end_command(&mut word, &mut words, &mut pipeline)?;
            }
            '&' => {
                if chars.next() != Some('&') {
                    return Err("background jobs (`&`) are not supported".into());
                }
                end_statement(&mut word, &mut words, &mut pipeline, &mut statements)?;
            }
            ';' | '\n' => end_statement(&mut word, &mut words, &mut pipeline, &mut statements)?,
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    end_statement(&mut word, &mut words, &mut pipeline, &mut statements)?;
    Ok(statements)
}

#[cfg(test)]
mod tests {
    use super::*;

    const QEMU_YAML: &str = "customization:\n    systemExtensions:\n        officialExtensions:\n            - siderolabs/qemu-guest-agent\n";
    const QEMU: &str = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515";

    fn image(schematic: &str) -> String {
        format!("https://factory.talos.dev/image/{schematic}/v1.12.6/hcloud-amd64.raw.xz")
    }

    fn command(register: Option<&str>, url: &str) -> String {
        let mut c = String::from("set -euo pipefail; ");
        if let Some(yaml) = register {
            c += &format!(
                "printf '%s' '{yaml}' | curl -fsS -X POST --data-binary @- 'https://factory.talos.dev/schematics' >/dev/null; "
            );
        }
        c += &format!(
            "curl -fsSL --retry 3 '{url}' | xz -d | dd of=/dev/sda bs=4M conv=fsync status=none; sync"
        );
        c
    }

    #[test]
    fn splits_like_a_shell() {
        let parsed = parse(r#"a 'b c'"d\"e" f\ g | h; i && j"#).unwrap();
        assert_eq!(
            parsed,
            vec![
                vec![
                    vec!["a".to_string(), "b cd\"e".into(), "f g".into()],
                    vec!["h".into()]
                ],
                vec![vec!["i".into()]],
                vec![vec!["j".into()]],
            ]
        );
        assert!(parse("echo $(id)").is_err());
        assert!(parse("a || b").is_err());
        assert!(parse("cat <<EOF").is_err());
        assert!(parse("'open").is_err());
    }

    #[test]
    fn accepts_the_default_schematic_without_registration() {
        let request = check(&command(None, &image(DEFAULT_SCHEMATIC))).unwrap();
        assert_eq!(request.version, "v1.12.6");
        assert_eq!(request.arch, "amd64");
        assert_eq!(request.factory, "https://factory.talos.dev");
        assert!(!request.registered);
    }

    #[test]
    fn custom_schematics_must_be_registered_with_matching_yaml() {
        let request = check(&command(Some(QEMU_YAML), &image(QEMU))).unwrap();
        assert!(request.registered);
        assert_eq!(request.schematic, QEMU);

        let unregistered = check(&command(None, &image(QEMU))).unwrap_err();
        assert_eq!(unregistered.status, 22);
        assert!(unregistered.stderr.contains("404"));

        let other_yaml = QEMU_YAML.replace("qemu-guest-agent", "iscsi-tools");
        let mismatch = check(&command(Some(&other_yaml), &image(QEMU))).unwrap_err();
        assert!(
            mismatch.stderr.contains("the image URL asks for"),
            "{mismatch:?}"
        );
    }

    #[test]
    fn refuses_commands_that_could_fail_silently_or_write_elsewhere() {
        let good = command(None, &image(DEFAULT_SCHEMATIC));
        let cases = [
            (good.replace("set -euo pipefail; ", ""), "set -euo pipefail"),
            (good.replace("-euo", "-eu"), "set -euo pipefail"),
            (good.replace("; sync", ""), "sync"),
            (good.replace("of=/dev/sda", "of=/dev/sdb"), "of=/dev/sda"),
            (good.replace("bs=4M ", ""), "bs="),
            (good.replace("xz -d", "gzip -d"), "xz -d"),
            (good.replace("curl -fsSL", "curl -sSL"), "curl -f"),
            (good.replace("v1.12.6", "latest"), "vX.Y.Z"),
            (
                good.replace("hcloud-amd64", "metal-amd64"),
                "hcloud-amd64.raw.xz",
            ),
            (good.replace("/image/", "/images/"), "factory image URL"),
        ];
        for (bad, phrase) in cases {
            let refusal = check(&bad).unwrap_err();
            assert_eq!(refusal.status, 2, "{bad}");
            assert!(refusal.stderr.contains(phrase), "{bad}: {}", refusal.stderr);
        }
    }
}
