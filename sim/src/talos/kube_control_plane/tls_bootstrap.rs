//! A kubelet's TLS bootstrap, as kubelet does it with the bootstrap token
//! of its Talos config: a CertificateSigningRequest of signer
//! `kubernetes.io/kube-apiserver-client-kubelet` for `system:node:<name>`
//! in `system:nodes`, filed with the token (the group
//! `system:bootstrappers:nodes`, which Talos' `01-csr-*` bindings let
//! create requests and have them approved); kube-controller-manager's
//! csrapproving controller approves it and its csrsigning controller
//! signs it. A node whose token the API server does not know (another
//! cluster's, a wrong one) never gets a certificate, so never registers.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::json;

use super::client::Client;
use crate::kube::csr;
use crate::talos::pki::{CertificateAuthority, IssuedCertificate};
use crate::talos::secret::Secret;

const SIGNER: &str = "kubernetes.io/kube-apiserver-client-kubelet";
const COLLECTION: &str = "/apis/certificates.k8s.io/v1/certificatesigningrequests";
/// How long a kubelet waits for its request to be signed within one pass
/// (kube-controller-manager signs in moments; when it does not run, the
/// pass must go on to notice that): it asks again in the next.
const SIGNED_WITHIN: Duration = Duration::from_secs(5);

/// The client certificate of `node`'s kubelet, from the API server at
/// `base` with `token`; Err says where it stopped.
pub async fn client_certificate(
    base: &str,
    ca: &CertificateAuthority,
    token: &Secret,
    node: &str,
) -> Result<IssuedCertificate, String> {
    let client = Client::with_token(base, ca, token.expose()).map_err(|e| e.to_string())?;
    let (request, key) = csr::request_with_key(node, &[], &[]);
    let body = json!({
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"generateName": "node-csr-"},
        "spec": {
            "request": STANDARD.encode(request),
            "signerName": SIGNER,
            "usages": ["digital signature", "client auth"],
        },
    });
    let created = (client.post(COLLECTION, &body).await)
        .map_err(|e| e.to_string())?
        .into_result("file its client certificate request (TLS bootstrap)")?;
    let name = created["metadata"]["name"]
        .as_str()
        .ok_or("the API server named no request")?
        .to_string();
    let deadline = tokio::time::Instant::now() + SIGNED_WITHIN;
    loop {
        let found = (client.get(&format!("{COLLECTION}/{name}")).await)
            .map_err(|e| e.to_string())?
            .into_result("read its client certificate request")?;
        if let Some(encoded) = found["status"]["certificate"].as_str() {
            let certificate = STANDARD
                .decode(encoded)
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
                .ok_or("the signed certificate is no base64 of PEM")?;
            return Ok(IssuedCertificate {
                certificate,
                key: Secret::new(key),
            });
        }
        let refused = found["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == "Denied" || c["type"] == "Failed");
        if let Some(condition) = refused {
            return Err(format!(
                "its client certificate request {name} was {}",
                condition["type"]
            ));
        }
        if tokio::time::Instant::now() > deadline {
            return Err(format!(
                "its client certificate request {name} was not signed within {SIGNED_WITHIN:?}"
            ));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
