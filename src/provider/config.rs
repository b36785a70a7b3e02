//! The `provider "hct"` block: how to reach the Hetzner Cloud API and the
//! nodes' private IPs.

use std::time::Duration;

use url::Url;

use crate::duration;
use crate::pace::Pace;
pub use crate::secret::Secret;
use crate::tf::{AttrPath, Attribute, Diagnostic, Diagnostics, Schema, Type, Value};

pub const DEFAULT_HCLOUD_ENDPOINT: &str = "https://api.hetzner.cloud/v1";

/// The resolved provider configuration. Debug shows no token or password.
#[derive(Clone)]
pub struct ProviderConfig {
    /// None when neither the attribute nor `HCLOUD_TOKEN` is set; only
    /// resources that call the API need it.
    pub hcloud_token: Option<Secret>,
    pub hcloud_endpoint: Url,
    /// SOCKS5 proxy that reaches the nodes' private IPs.
    pub talos_proxy: Option<Url>,
    /// The poll interval, and the retry waits derived from it.
    pub pace: Pace,
}

impl std::fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let proxy = self.talos_proxy.as_ref().map(|url| {
            let mut shown = url.clone();
            if shown.password().is_some() {
                let _ = shown.set_password(Some("REDACTED"));
            }
            shown.to_string()
        });
        f.debug_struct("ProviderConfig")
            .field("hcloud_token", &self.hcloud_token)
            .field("hcloud_endpoint", &self.hcloud_endpoint.as_str())
            .field("talos_proxy", &proxy)
            .field("pace", &self.pace)
            .finish()
    }
}

pub fn schema() -> Schema {
    Schema::new(
        0,
        "Builds private-only Talos Linux Kubernetes clusters on Hetzner Cloud. Every attribute \
         can also come from the environment, so CI can configure hct without HCL changes.",
    )
    .attribute(
        Attribute::optional("hcloud_token", Type::String)
            .sensitive()
            .description(
                "Hetzner Cloud API token (read & write). Default: the `HCLOUD_TOKEN` environment \
                 variable. Only resources that call the Hetzner API need it.",
            ),
    )
    .attribute(
        Attribute::optional("hcloud_endpoint", Type::String).description(format!(
            "Hetzner Cloud API endpoint. Default: the `HCLOUD_ENDPOINT` environment variable, \
         else `{DEFAULT_HCLOUD_ENDPOINT}`. Point it at `hct-sim` to try hct without an account."
        )),
    )
    .attribute(
        Attribute::optional("talos_proxy", Type::String).description(
            "A `socks5://host:port` proxy through which hct reaches the nodes' private IPs, e.g. \
         Tailscale's userspace networking or an SSH `-D` bastion; `socks5://user:password@host:port` \
         gives it a user name and password (RFC 1929; hct-sim takes the network's name as the \
         user name where networks overlap). Default: the `HCT_TALOS_PROXY` environment \
         variable, then `ALL_PROXY`. Leave unset when Terraform runs inside the private network.",
        ),
    )
    .attribute(
        Attribute::optional("poll_interval", Type::String).description(
            "How often to poll Hetzner actions at first (hct backs off from there for long \
         waits). A duration such as `\"500ms\"` or `\"2s\"`. Default: the `HCT_POLL_INTERVAL` \
         environment variable, else `\"500ms\"` with the first poll of an action after the \
         time Hetzner typically takes for it (fewer requests). When set, actions are polled \
         at this interval from the start, and retries (5xx, `locked`, a node not \
         answering yet) wait proportionally less when it is shorter than `\"500ms\"` \
         (useful against hct-sim).",
        ),
    )
}

/// Checks the attributes that are known; unknown ones are checked when
/// Terraform configures the provider with their values.
pub fn validate(config: &Value) -> Diagnostics {
    let mut diagnostics = Diagnostics::new();
    if let Some(token) = config.get("hcloud_token").as_str()
        && (token.trim().is_empty() || token.chars().any(char::is_whitespace))
    {
        diagnostics.push(
            Diagnostic::error(
                "Invalid Hetzner Cloud token",
                "hcloud_token is empty or contains white space. Create an API token with read & \
                 write permission in the Hetzner Cloud console (Security → API tokens) and pass it \
                 unchanged, or leave the attribute unset and export HCLOUD_TOKEN.",
            )
            .at(AttrPath::attr("hcloud_token")),
        );
    }
    if let Some(endpoint) = config.get("hcloud_endpoint").as_str()
        && let Err(diagnostic) = parse_endpoint(endpoint)
    {
        diagnostics.push(diagnostic.at(AttrPath::attr("hcloud_endpoint")));
    }
    if let Some(proxy) = config.get("talos_proxy").as_str()
        && let Err(diagnostic) = parse_proxy(proxy, "talos_proxy")
    {
        diagnostics.push(diagnostic.at(AttrPath::attr("talos_proxy")));
    }
    if let Some(interval) = config.get("poll_interval").as_str()
        && let Err(diagnostic) = parse_poll_interval(interval)
    {
        diagnostics.push(diagnostic.at(AttrPath::attr("poll_interval")));
    }
    diagnostics
}

/// Where the environment supplies defaults.
pub trait Environment {
    fn var(&self, name: &str) -> Option<String>;
}

/// The process environment.
pub struct ProcessEnvironment;

impl Environment for ProcessEnvironment {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|v| !v.is_empty())
    }
}

/// Resolves the configuration: attributes first, then the environment, then
/// defaults. Returns `Ok(None)` while an attribute is still unknown (the
/// provider is configured again once it is known).
pub fn resolve(
    config: &Value,
    env: &dyn Environment,
) -> Result<Option<ProviderConfig>, Diagnostics> {
    if !config.is_wholly_known() {
        return Ok(None);
    }
    let diagnostics = validate(config);
    if diagnostics.has_errors() {
        return Err(diagnostics);
    }
    let pick = |attribute: &str, env_names: &[&str]| -> Option<(String, String)> {
        if let Some(value) = config.get(attribute).as_str() {
            return Some((value.to_string(), attribute.to_string()));
        }
        env_names.iter().find_map(|name| {
            env.var(name)
                .map(|value| (value, format!("environment variable {name}")))
        })
    };

    let mut diagnostics = Diagnostics::new();
    let hcloud_token =
        pick("hcloud_token", &["HCLOUD_TOKEN"]).map(|(token, _)| Secret::new(token.trim()));
    let hcloud_endpoint = match pick("hcloud_endpoint", &["HCLOUD_ENDPOINT"]) {
        None => Url::parse(DEFAULT_HCLOUD_ENDPOINT).ok(),
        Some((text, source)) => parse_endpoint(&text)
            .map_err(|d| diagnostics.push(from_source(d, &source, "hcloud_endpoint")))
            .ok(),
    };
    let talos_proxy = match pick(
        "talos_proxy",
        &["HCT_TALOS_PROXY", "ALL_PROXY", "all_proxy"],
    ) {
        None => None,
        Some((text, source)) => parse_proxy(&text, &source)
            .map_err(|d| diagnostics.push(from_source(d, &source, "talos_proxy")))
            .ok(),
    };
    let pace = match pick("poll_interval", &["HCT_POLL_INTERVAL"]) {
        None => Pace::default(),
        Some((text, source)) => match parse_poll_interval(&text) {
            Ok(interval) => Pace::set(interval),
            Err(d) => {
                diagnostics.push(from_source(d, &source, "poll_interval"));
                Pace::default()
            }
        },
    };
    match hcloud_endpoint {
        Some(hcloud_endpoint) if !diagnostics.has_errors() => Ok(Some(ProviderConfig {
            hcloud_token,
            hcloud_endpoint,
            talos_proxy,
            pace,
        })),
        _ => Err(diagnostics),
    }
}

/// Points a diagnostic at the attribute when the value came from it, and
/// names the environment variable otherwise.
fn from_source(diagnostic: Diagnostic, source: &str, attribute: &str) -> Diagnostic {
    if source == attribute {
        diagnostic.at(AttrPath::attr(attribute))
    } else {
        Diagnostic {
            detail: format!("The value comes from the {source}. {}", diagnostic.detail),
            ..diagnostic
        }
    }
}

fn parse_endpoint(text: &str) -> Result<Url, Diagnostic> {
    let invalid = |why: &str| {
        Diagnostic::error(
            "Invalid Hetzner Cloud endpoint",
            format!(
                "{text:?} {why}. Use an http(s) URL such as \"{DEFAULT_HCLOUD_ENDPOINT}\", or the \
                 HCLOUD_ENDPOINT that `hct-sim serve` prints."
            ),
        )
    };
    let url = Url::parse(text).map_err(|_| invalid("is not a URL"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(invalid("is not an http or https URL with a host"));
    }
    Ok(url)
}

fn parse_proxy(text: &str, source: &str) -> Result<Url, Diagnostic> {
    // A password in the URL is never quoted back.
    let shown = match Url::parse(text) {
        Ok(mut url) if url.password().is_some() => {
            let _ = url.set_password(Some("REDACTED"));
            format!("{:?}", url.as_str())
        }
        Err(_) if text.contains('@') => "(not shown: it may hold a password)".to_string(),
        _ => format!("{text:?}"),
    };
    let invalid = |why: &str| {
        Diagnostic::error(
            "Invalid SOCKS5 proxy",
            format!(
                "{source} = {shown} {why}. hct reaches the nodes' private IPs through a SOCKS5 \
                 proxy: write \"socks5://HOST:PORT\" (e.g. \"socks5://127.0.0.1:1055\" for \
                 Tailscale userspace networking, or the port of `ssh -D`), with \
                 \"USER:PASSWORD@\" before the host when the proxy wants them."
            ),
        )
    };
    let url = Url::parse(text).map_err(|_| invalid("is not a URL"))?;
    if !matches!(url.scheme(), "socks5" | "socks5h") {
        return Err(invalid(&format!(
            "uses the scheme {:?}, not socks5",
            url.scheme()
        )));
    }
    if url.host_str().is_none() || url.port().is_none() {
        return Err(invalid("lacks a host and port"));
    }
    match proxy_credentials(&url) {
        Err(()) => return Err(invalid("has a user name or password that is not UTF-8")),
        Ok(Some((user, password))) if user.len() > 255 || password.len() > 255 => {
            return Err(invalid("has a user name or password longer than 255 bytes"));
        }
        Ok(None) if url.password().is_some() => {
            return Err(invalid("has a password but no user name"));
        }
        Ok(_) => {}
    }
    Ok(url)
}

/// A proxy URL's user name and password, percent-decoded (the password may
/// be empty); None without a user name; Err when either is not UTF-8.
pub(crate) fn proxy_credentials(url: &Url) -> Result<Option<(String, String)>, ()> {
    let decoded = |part: &str| {
        percent_encoding::percent_decode_str(part)
            .decode_utf8()
            .map(|text| text.into_owned())
            .map_err(drop)
    };
    if url.username().is_empty() {
        return Ok(None);
    }
    let password = decoded(url.password().unwrap_or_default())?;
    Ok(Some((decoded(url.username())?, password)))
}

fn parse_poll_interval(text: &str) -> Result<Duration, Diagnostic> {
    let interval =
        duration::parse(text).map_err(|why| Diagnostic::error("Invalid poll interval", why))?;
    if interval < Duration::from_millis(50) || interval > Duration::from_secs(60) {
        return Err(Diagnostic::error(
            "Poll interval out of range",
            format!(
                "poll_interval = {text:?} must lie between 50ms and 60s: shorter floods the \
                 Hetzner API (rate limit 3600 requests/hour), longer makes every wait slow."
            ),
        ));
    }
    Ok(interval)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    struct FakeEnv(HashMap<&'static str, &'static str>);

    impl Environment for FakeEnv {
        fn var(&self, name: &str) -> Option<String> {
            self.0.get(name).map(|v| v.to_string())
        }
    }

    fn config(pairs: &[(&str, Value)]) -> Value {
        let mut all = vec![
            ("hcloud_token", Value::Null),
            ("hcloud_endpoint", Value::Null),
            ("talos_proxy", Value::Null),
            ("poll_interval", Value::Null),
        ];
        for (name, value) in pairs {
            all.retain(|(n, _)| n != name);
            all.push((name, value.clone()));
        }
        Value::object(all.into_iter().map(|(n, v)| (n.to_string(), v)))
    }

    #[test]
    fn attributes_win_over_environment_which_wins_over_defaults() {
        let env = FakeEnv(HashMap::from([
            ("HCLOUD_TOKEN", "from-env"),
            ("HCLOUD_ENDPOINT", "http://127.0.0.1:9/v1"),
            ("ALL_PROXY", "socks5://127.0.0.1:1080"),
        ]));
        let resolved = resolve(&config(&[("hcloud_token", Value::from("from-hcl"))]), &env)
            .unwrap()
            .unwrap();
        assert_eq!(resolved.hcloud_token.unwrap().expose(), "from-hcl");
        assert_eq!(resolved.hcloud_endpoint.as_str(), "http://127.0.0.1:9/v1");
        assert_eq!(
            resolved.talos_proxy.unwrap().as_str(),
            "socks5://127.0.0.1:1080"
        );
        assert_eq!(resolved.pace, Pace::default());

        let defaults = resolve(&config(&[]), &FakeEnv(HashMap::new()))
            .unwrap()
            .unwrap();
        assert!(defaults.hcloud_token.is_none());
        assert_eq!(defaults.hcloud_endpoint.as_str(), DEFAULT_HCLOUD_ENDPOINT);
        assert!(defaults.talos_proxy.is_none());
    }

    #[test]
    fn hct_proxy_variable_beats_all_proxy() {
        let env = FakeEnv(HashMap::from([
            ("HCT_TALOS_PROXY", "socks5://127.0.0.1:2000"),
            ("ALL_PROXY", "socks5://127.0.0.1:1080"),
        ]));
        let resolved = resolve(&config(&[]), &env).unwrap().unwrap();
        assert_eq!(resolved.talos_proxy.unwrap().port(), Some(2000));
    }

    #[test]
    fn unknown_values_defer_configuration() {
        assert!(
            resolve(
                &config(&[("hcloud_token", Value::Unknown)]),
                &FakeEnv(HashMap::new())
            )
            .unwrap()
            .is_none()
        );
    }

    #[test]
    fn malformed_values_are_errors_at_their_attribute() {
        let cases = [
            ("hcloud_endpoint", "api.hetzner.cloud", "not a URL"),
            ("talos_proxy", "http://127.0.0.1:8080", "not socks5"),
            ("talos_proxy", "socks5://127.0.0.1", "lacks a host and port"),
            ("poll_interval", "fast", "not a duration"),
            ("poll_interval", "5m", "between 50ms and 60s"),
            ("hcloud_token", " ", "white space"),
        ];
        for (attribute, text, phrase) in cases {
            let diagnostics = validate(&config(&[(attribute, Value::from(text))]));
            let first = diagnostics
                .iter()
                .next()
                .unwrap_or_else(|| panic!("{attribute}={text}"));
            assert_eq!(first.path, Some(AttrPath::attr(attribute)));
            assert!(
                first.detail.contains(phrase),
                "{attribute}={text}: {}",
                first.detail
            );
        }
    }

    #[test]
    fn bad_environment_values_name_the_variable() {
        let env = FakeEnv(HashMap::from([("HCT_TALOS_PROXY", "localhost:1080")]));
        let diagnostics = resolve(&config(&[]), &env).unwrap_err();
        let first = diagnostics.iter().next().unwrap();
        assert!(
            first
                .detail
                .contains("environment variable HCT_TALOS_PROXY")
        );
        assert!(first.path.is_none());
    }

    #[test]
    fn a_proxy_password_is_never_quoted_back() {
        for bad in [
            "http://user:hunter2@127.0.0.1:1080",
            "socks5://user:hunter2@127.0.0.1",
        ] {
            let d = parse_proxy(bad, "talos_proxy").unwrap_err();
            assert!(!d.detail.contains("hunter2"), "{}", d.detail);
            assert!(d.detail.contains("REDACTED"), "{}", d.detail);
        }
        let no_user = parse_proxy("socks5://:hunter2@127.0.0.1:1080", "talos_proxy").unwrap_err();
        assert!(
            no_user.detail.contains("no user name"),
            "{}",
            no_user.detail
        );
        assert!(!no_user.detail.contains("hunter2"));
        let config = ProviderConfig {
            hcloud_token: None,
            hcloud_endpoint: Url::parse("http://127.0.0.1:1/v1").unwrap(),
            talos_proxy: Some(Url::parse("socks5://net:hunter2@127.0.0.1:1080").unwrap()),
            pace: Pace::default(),
        };
        assert!(!format!("{config:?}").contains("hunter2"));
        let good = parse_proxy("socks5://the%20net:hunter2@127.0.0.1:1080", "talos_proxy");
        assert_eq!(good.unwrap().username(), "the%20net");
    }

    #[test]
    fn secrets_do_not_print() {
        let secret = Secret::new("hunter2");
        assert!(!format!("{secret:?}").contains("hunter2"));
    }
}
