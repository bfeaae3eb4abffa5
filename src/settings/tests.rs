use super::*;
use crate::settings::names::check_dns_subdomain;

fn parse(json: &str) -> Result<Settings, String> {
    let settings = Settings::from_json(json.as_bytes())?;
    settings.validate()?;
    Ok(settings)
}

#[test]
fn empty_settings_are_valid_with_defaults() {
    let settings = parse("{}").unwrap();
    assert_eq!(settings, Settings::default());
    assert_eq!(settings.default_operating_system, "linux");
    assert_eq!(settings.on_lookup_failure, OnLookupFailure::IgnoreImage);
    assert_eq!(
        settings.on_no_common_architecture,
        OnNoCommonArchitecture::Reject
    );
}

#[test]
fn full_settings_parse() {
    let settings = parse(
        r#"{"defaultOperatingSystem":"windows","schedulableArchitectures":["amd64","arm64"],
        "onNoCommonArchitecture":"accept","onLookupFailure":"reject",
        "registryMirrors":{"docker.io":"mirror.example.com:5000/hub"},
        "imagePlatforms":[{"image":"registry.example.com/legacy/*","architectures":["amd64"]}],
        "preferredArchitecture":"arm64","preferredArchitectureWeight":10,
        "architectureTolerations":{"arm64":[{"key":"kubernetes.io/arch","operator":"Equal","value":"arm64","effect":"NoSchedule"}]},
        "matchNodeLabels":["topology.kubernetes.io/zone"]}"#,
    )
    .unwrap();
    assert_eq!(settings.on_lookup_failure, OnLookupFailure::Reject);
    assert_eq!(settings.preferred_architecture_weight, 10);
    assert_eq!(settings.image_platforms[0].architectures, ["amd64"]);
}

#[test]
fn weighted_preferences_and_fallback_architectures_are_checked() {
    let settings = parse(
        r#"{"preferredArchitectures":[{"architecture":"arm64","weight":80},{"architecture":"amd64","weight":20}],
            "fallbackArchitectures":["amd64"]}"#,
    )
    .unwrap();
    assert_eq!(settings.preferences(), [("arm64", 80), ("amd64", 20)]);
    let one =
        parse(r#"{"preferredArchitecture":"arm64","preferredArchitectureWeight":30}"#).unwrap();
    assert_eq!(one.preferences(), [("arm64", 30)]);
    let cases = [
        (
            r#"{"preferredArchitectures":[{"architecture":"aarch64","weight":80}]}"#,
            "preferredArchitectures[0].architecture: unknown architecture \"aarch64\"; use a node `kubernetes.io/arch` value: 386, amd64, arm, arm64, loong64, mips, mips64, mips64le, mipsle, ppc64, ppc64le, riscv64, s390x, wasm",
        ),
        (
            r#"{"preferredArchitectures":[{"architecture":"arm64","weight":80},{"architecture":"amd64","weight":0}]}"#,
            "preferredArchitectures[1].weight: 0 is outside 1..100 (the weight of a preferred node affinity term)",
        ),
        (
            r#"{"preferredArchitectures":[{"architecture":"arm64","weight":80},{"architecture":"arm64","weight":10}]}"#,
            "preferredArchitectures: \"arm64\" is listed twice",
        ),
        (
            r#"{"schedulableArchitectures":["amd64"],"preferredArchitectures":[{"architecture":"arm64","weight":80}]}"#,
            "preferredArchitectures[0].architecture: \"arm64\" is not one of schedulableArchitectures (amd64)",
        ),
        (
            r#"{"preferredArchitecture":"arm64","preferredArchitectures":[{"architecture":"amd64","weight":80}]}"#,
            "preferredArchitecture and preferredArchitectures exclude each other: preferredArchitecture: arm64 with \
             preferredArchitectureWeight: 50 is preferredArchitectures: [{architecture: arm64, weight: 50}]",
        ),
        (
            r#"{"preferredArchitectures":[{"architecture":"arm64"}]}"#,
            "invalid settings: missing field `weight` at line 1 column 51",
        ),
        (
            r#"{"fallbackArchitectures":["amd64","x86_64"]}"#,
            "fallbackArchitectures[1]: unknown architecture \"x86_64\"; use a node `kubernetes.io/arch` value: 386, amd64, arm, arm64, loong64, mips, mips64, mips64le, mipsle, ppc64, ppc64le, riscv64, s390x, wasm",
        ),
        (
            r#"{"fallbackArchitectures":["amd64","amd64"]}"#,
            "fallbackArchitectures: \"amd64\" is listed twice",
        ),
        (
            r#"{"schedulableArchitectures":["arm64"],"fallbackArchitectures":["amd64"]}"#,
            "fallbackArchitectures[0]: \"amd64\" is not one of schedulableArchitectures (arm64)",
        ),
        (
            r#"{"onLookupFailure":"accept","fallbackArchitectures":["amd64"]}"#,
            "fallbackArchitectures applies under onLookupFailure: ignoreImage only (with accept a Pod whose \
             lookups fail is left unpinned, with reject it is rejected)",
        ),
    ];
    for (json, message) in cases {
        assert_eq!(parse(json).unwrap_err(), message, "{json}");
    }
}

#[test]
fn each_bad_setting_is_named() {
    let cases = [
        (r#"{"bogus":1}"#, "invalid settings: unknown field `bogus`"),
        (
            r#"{"defaultOperatingSystem":"linx"}"#,
            "defaultOperatingSystem: unknown operating system \"linx\"; use one of: aix,",
        ),
        (
            r#"{"schedulableArchitectures":["amd64","x86_64"]}"#,
            "schedulableArchitectures: unknown architecture \"x86_64\"; use a node `kubernetes.io/arch` value: 386, amd64,",
        ),
        (
            r#"{"onLookupFailure":"ignore"}"#,
            "invalid settings: unknown variant `ignore`, expected one of `ignoreImage`, `accept`, `reject`",
        ),
        (
            r#"{"preferredArchitectureWeight":0}"#,
            "preferredArchitectureWeight: 0 is outside 1..100",
        ),
        (
            r#"{"preferredArchitectureWeight":101}"#,
            "preferredArchitectureWeight: 101 is outside 1..100",
        ),
        (
            r#"{"schedulableArchitectures":["amd64"],"preferredArchitecture":"arm64"}"#,
            "preferredArchitecture: \"arm64\" is not one of schedulableArchitectures (amd64)",
        ),
        (
            r#"{"preferredArchitecture":"aarch64"}"#,
            "preferredArchitecture: unknown architecture \"aarch64\"",
        ),
        (
            r#"{"registryMirrors":{"docker.io":"not a host"}}"#,
            "registryMirrors[\"docker.io\"]: \"not a host\" is not a registry host",
        ),
        (
            r#"{"registryMirrors":{"https://docker.io":"m.example.com"}}"#,
            "registryMirrors: key \"https://docker.io\": ",
        ),
        (
            r#"{"imagePlatforms":[{"image":"a b","architectures":["amd64"]}]}"#,
            "imagePlatforms[0].image: \"a b\" is not an image pattern",
        ),
        (
            r#"{"imagePlatforms":[{"image":"a/*","architectures":[]}]}"#,
            "imagePlatforms[0].architectures: list the architectures",
        ),
        (
            r#"{"imagePlatforms":[{"image":"a/*","architectures":["armv7"]}]}"#,
            "imagePlatforms[0].architectures: unknown architecture \"armv7\"",
        ),
        (
            r#"{"imagePlatforms":[{"image":"a/*","architectures":["amd64"],"operatingSystems":["Linux"]}]}"#,
            "imagePlatforms[0].operatingSystems: \"Linux\" is no node operating system; use a node `kubernetes.io/os` value: linux, windows",
        ),
        (
            r#"{"imagePlatforms":[{"image":"a/*","architectures":["amd64"],"operatingSystems":["linux","linux"]}]}"#,
            "imagePlatforms[0].operatingSystems: \"linux\" is listed twice",
        ),
        (
            r#"{"architectureTolerations":{"arm64":[{"key":"k","operator":"Exists","value":"v"}]}}"#,
            "architectureTolerations[\"arm64\"][0]: operator Exists takes no value",
        ),
        (
            r#"{"architectureTolerations":{"arm64":[{"key":"k","operator":"Equals"}]}}"#,
            "architectureTolerations[\"arm64\"][0]: operator \"Equals\" is not Equal or Exists",
        ),
        (
            r#"{"architectureTolerations":{"arm64":[{"key":"k","effect":"NoSchedul"}]}}"#,
            "architectureTolerations[\"arm64\"][0]: effect \"NoSchedul\" is not NoSchedule, PreferNoSchedule or NoExecute",
        ),
        (
            r#"{"architectureTolerations":{"arm64":[{"key":"k","effect":"NoSchedule","tolerationSeconds":5}]}}"#,
            "architectureTolerations[\"arm64\"][0]: tolerationSeconds needs effect NoExecute",
        ),
        (
            r#"{"architectureTolerations":{"arm64":[{"value":"v"}]}}"#,
            "architectureTolerations[\"arm64\"][0]: operator Equal needs a key",
        ),
        (
            r#"{"architectureTolerations":{"arm64":[{"key":"k","tolerance":1}]}}"#,
            "invalid settings: unknown field `tolerance`",
        ),
        (
            r#"{"architectureTolerations":{"arm":[{"key":"bad key!"}]}}"#,
            "architectureTolerations[\"arm\"][0]: key: \"bad key!\" is not a label key",
        ),
        (
            r#"{"lookupBudgetMilliseconds":0}"#,
            "lookupBudgetMilliseconds: 0 is outside 1..30000",
        ),
        (
            r#"{"templateDecisionSeconds":604801}"#,
            "templateDecisionSeconds: 604801 is outside 0..604800",
        ),
        (
            r#"{"clusterOperatingSystems":["linux","Windows"]}"#,
            "clusterOperatingSystems: \"Windows\" is no node operating system; use a node `kubernetes.io/os` value: linux, windows",
        ),
        (
            r#"{"clusterOperatingSystems":["linux","linux"]}"#,
            "clusterOperatingSystems: \"linux\" is listed twice",
        ),
        (
            r#"{"clusterOperatingSystems":["windows"]}"#,
            "clusterOperatingSystems: windows has no Node of defaultOperatingSystem (linux), where the Pods that state no OS run; add it, or change defaultOperatingSystem",
        ),
        (
            r#"{"readNodes":true,"clusterOperatingSystems":["linux","windows"]}"#,
            "clusterOperatingSystems and readNodes: true exclude each other",
        ),
        (
            r#"{"matchNodeLabels":["Zone Name"]}"#,
            "matchNodeLabels: \"Zone Name\" is not a label key",
        ),
        (
            r#"{"readNodes":"yes"}"#,
            "invalid settings: invalid type: string \"yes\", expected a boolean",
        ),
        (
            r#"{"readNodes":true,"schedulableArchitectures":["amd64"]}"#,
            "schedulableArchitectures and readNodes: true exclude each other",
        ),
        (
            r#"{"autoscaledArchitectures":[{"os":"linux","architectures":["arm64"]}]}"#,
            "autoscaledArchitectures is read only with readNodes: true",
        ),
        (
            r#"{"readNodes":true,"autoscaledArchitectures":[{"os":"Linux","architectures":["arm64"]}]}"#,
            "autoscaledArchitectures[0].os: \"Linux\" is not an operating system",
        ),
        (
            r#"{"readNodes":true,"autoscaledArchitectures":[{"os":"linux","architectures":[]}]}"#,
            "autoscaledArchitectures[0].architectures: list the architectures of the linux node pools",
        ),
        (
            r#"{"readNodes":true,"autoscaledArchitectures":[{"os":"windows","architectures":["x86_64"]}]}"#,
            "autoscaledArchitectures[0].architectures: unknown architecture \"x86_64\"",
        ),
        (
            r#"{"readNodes":true,"autoscaledArchitectures":[{"architectures":["arm64"]}]}"#,
            "invalid settings: missing field `os`",
        ),
        (
            r#"{"wasmRuntimeClasses":["wasmtime-spin-v2","Spin"]}"#,
            "wasmRuntimeClasses[1]: \"Spin\" is not a DNS subdomain (lowercase letters, digits, '-' and '.', at most 253 characters) (a RuntimeClass name)",
        ),
        (
            r#"{"wasmRuntimeClasses":["spin."]}"#,
            "wasmRuntimeClasses[0]: \"spin.\" is not a DNS subdomain",
        ),
        (
            r#"{"wasmRuntimeClasses":[""]}"#,
            "wasmRuntimeClasses[0]: \"\" is not a DNS subdomain",
        ),
        (
            r#"{"wasmRuntimeClasses":["wasmedge","wasmedge"]}"#,
            "wasmRuntimeClasses: \"wasmedge\" is listed twice",
        ),
        (
            r#"{"wasmRuntimeClasses":"wasmedge"}"#,
            "invalid settings: invalid type: string \"wasmedge\", expected a sequence",
        ),
    ];
    for (json, expected) in cases {
        let err = parse(json).unwrap_err();
        assert!(
            err.starts_with(expected),
            "settings {json}\n  got: {err}\n want: {expected}..."
        );
    }
}

#[test]
fn wasm_runtime_classes_are_runtime_class_names() {
    let settings =
        parse(r#"{"wasmRuntimeClasses":["wasmtime-spin-v2","wasmedge","crun.wasm"]}"#).unwrap();
    assert_eq!(
        settings.wasm_runtime_classes,
        ["wasmtime-spin-v2", "wasmedge", "crun.wasm"]
    );
    assert_eq!(check_dns_subdomain(&"a".repeat(253)), Ok(()));
    assert!(check_dns_subdomain(&"a".repeat(254)).is_err());
    for bad in ["-spin", "spin-", "a..b", "wasm_edge", "spin v2"] {
        assert!(check_dns_subdomain(bad).is_err(), "{bad}");
    }
}

#[test]
fn cluster_operating_systems_say_whether_a_pod_has_others() {
    let both = parse(
        r#"{"defaultOperatingSystem":"windows","clusterOperatingSystems":["windows","linux"]}"#,
    )
    .unwrap();
    assert!(both.other_operating_system("linux") && both.other_operating_system("windows"));
    let one = parse(r#"{"clusterOperatingSystems":["linux"]}"#).unwrap();
    assert!(!one.other_operating_system("linux") && one.other_operating_system("windows"));
    assert!(!Settings::default().other_operating_system("windows"));
}

#[test]
fn node_aware_settings_parse() {
    let settings = parse(
        r#"{"readNodes":true,"autoscaledArchitectures":[{"os":"linux","architectures":["arm64"]},{"os":"windows","architectures":["amd64"]},{"os":"linux","architectures":["s390x"]}]}"#,
    )
    .unwrap();
    assert!(settings.read_nodes);
    assert_eq!(
        settings.autoscaled("linux"),
        ["arm64".to_string(), "s390x".to_string()].into()
    );
    assert_eq!(settings.autoscaled("freebsd"), Architectures::new());
    assert!(!Settings::default().read_nodes);
}

#[test]
fn docker_hub_aliases_are_no_mirror_keys() {
    for alias in ["index.docker.io", "registry-1.docker.io"] {
        let json = format!(r#"{{"registryMirrors":{{"{alias}":"harbor.example.com/dockerhub"}}}}"#);
        assert_eq!(
            parse(&json),
            Err(format!(
                "registryMirrors: key \"{alias}\" is Docker Hub, which image references name docker.io \
                 (busybox is docker.io/library/busybox): this key would match no image; use \"docker.io\" instead"
            ))
        );
    }
    assert!(parse(r#"{"registryMirrors":{"docker.io":"harbor.example.com/dockerhub"}}"#).is_ok());
}

#[test]
fn tolerations_compare_with_defaults() {
    let a: Toleration = serde_json::from_str(r#"{"key":"k","value":"v"}"#).unwrap();
    let b: Toleration =
        serde_json::from_str(r#"{"key":"k","operator":"Equal","value":"v"}"#).unwrap();
    let c: Toleration = serde_json::from_str(r#"{"key":"k","operator":"Exists"}"#).unwrap();
    assert!(same_toleration(&a, &b));
    assert!(!same_toleration(&a, &c));
}
