//! The catalog as Hetzner's API answers it: server types, locations and data
//! centers by ID and in ID order, a retired server type readable by ID only
//! and refused for new servers, a type withdrawn from one location refused
//! there only.

use crate::common::{call, sim, talos_image};

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

fn names(list: &Value) -> Vec<&str> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|item| item["name"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn server_types_by_id_and_in_order() {
    let sim = sim().await;
    let (status, list) = call(&sim, Method::GET, "/server_types?per_page=50", None).await;
    assert_eq!(status, StatusCode::OK, "{list}");
    let listed = names(&list["server_types"]);
    assert_eq!(listed[..2], ["cpx11", "cpx21"]);
    assert!(!listed.contains(&"cx11"));
    let (_, cpx22) = call(&sim, Method::GET, "/server_types/109", None).await;
    let cpx22 = &cpx22["server_type"];
    assert_eq!(cpx22["name"], "cpx22");
    assert_eq!(names(&cpx22["locations"]), ["fsn1", "nbg1", "hel1", "sin"]);
    assert_eq!(cpx22["locations"][0]["id"], 1);
    let (_, by_name) = call(&sim, Method::GET, "/server_types?name=cpx12", None).await;
    assert_eq!(by_name["server_types"][0]["id"], 108);

    let (status, cx11) = call(&sim, Method::GET, "/server_types/1", None).await;
    assert_eq!(status, StatusCode::OK, "{cx11}");
    assert_eq!(cx11["server_type"]["name"], "cx11");
    assert_eq!(cx11["server_type"]["deprecated"], true);
    assert!(cx11["server_type"]["deprecation"]["unavailable_after"].is_string());
    let (_, hidden) = call(&sim, Method::GET, "/server_types?name=cx11", None).await;
    assert_eq!(hidden["server_types"], json!([]));
}

#[tokio::test]
async fn datacenters_follow_locations() {
    let sim = sim().await;
    let (status, list) = call(&sim, Method::GET, "/datacenters", None).await;
    assert_eq!(status, StatusCode::OK, "{list}");
    assert_eq!(
        names(&list["datacenters"]),
        [
            "nbg1-dc3",
            "hel1-dc2",
            "fsn1-dc14",
            "ash-dc1",
            "hil-dc1",
            "sin-dc1"
        ]
    );
    assert!(list["recommendation"].is_i64());
    let (status, fsn1) = call(&sim, Method::GET, "/datacenters/4", None).await;
    assert_eq!(status, StatusCode::OK, "{fsn1}");
    let fsn1 = &fsn1["datacenter"];
    assert_eq!(fsn1["name"], "fsn1-dc14");
    assert_eq!(fsn1["location"]["name"], "fsn1");
    assert_eq!(fsn1["location"]["id"], 1);
    let available = fsn1["server_types"]["available"].as_array().unwrap();
    assert!(available.contains(&json!(108)) && !available.contains(&json!(22)));
    let (_, by_name) = call(&sim, Method::GET, "/datacenters?name=sin-dc1", None).await;
    assert_eq!(by_name["datacenters"][0]["id"], 7);
    let (status, missing) = call(&sim, Method::GET, "/datacenters/1", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{missing}");
}

#[tokio::test]
async fn unavailable_server_types_are_refused() {
    let sim = sim().await;
    let image = talos_image(&sim);
    let order = |server_type: &str, place: Value| {
        let mut body = json!({"name": "n", "server_type": server_type, "image": image});
        if let Value::Object(extra) = place {
            body.as_object_mut().unwrap().extend(extra);
        }
        body
    };
    for (server_type, place) in [
        ("1", json!({})),
        ("cpx11", json!({"location": "fsn1"})),
        ("cpx11", json!({"datacenter": "nbg1-dc3"})),
    ] {
        let body = order(server_type, place);
        let (status, answer) = call(&sim, Method::POST, "/servers", Some(body)).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
        assert_eq!(answer["error"]["code"], "invalid_server_type");
    }
    let body = order("cpx11", json!({"datacenter": "ash-dc1"}));
    let (status, answer) = call(&sim, Method::POST, "/servers", Some(body)).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    assert_eq!(answer["server"]["location"]["name"], "ash");
}
