//! Settings files: defaults, merge order, warnings, and provider resolution.

// Helpers outside #[test] functions unwrap too: a failure there is a test failure.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use musepi_cli::settings::{
    Cap, CompactionSettings, HookCommand, ProviderEntry, Settings, SettingsError, SettingsSources,
    SettingsWarning, SnapcompactSettings, SystemPromptImaging, Untrusted, load_settings,
    merge_layers,
};
use musepi_cli::trust::{TrustStore, Trusted, key_for, sha256_hex};
use musepi_hooks::Summarizer;
use musepi_providers::{
    ApiKey, DeveloperRole, ProviderConfig, ProviderError, ProviderFlags, ProviderKind,
};
use musepi_runtime::MaintenanceStrategy;
use serde_json::{Value, json};

fn write(dir: &Path, relative: &str, value: &Value) -> PathBuf {
    let path = dir.join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, value.to_string()).unwrap();
    path
}

/// Writes `value` as the settings file of `folder`, a home or a project
/// folder: `folder/.musepi/settings.json`.
fn settings_file(folder: &Path, value: &Value) -> PathBuf {
    write(folder, ".musepi/settings.json", value)
}

/// A user's settings file and a project's, and the sources that read them.
struct Layout {
    /// `home/.musepi/settings.json`.
    user: PathBuf,
    /// `project/.musepi/settings.json`.
    project: PathBuf,
    /// The trust store in the home folder, `home/.musepi/trusted.json`:
    /// none until [`Layout::trust`] writes it.
    store: PathBuf,
    /// The user's file, the project's and the trust store.
    sources: SettingsSources,
}

/// Writes `user` as the user's settings file and `project` as the
/// project's, below `dir`.
fn user_and_project(dir: &Path, user: &Value, project: &Value) -> Layout {
    let user = settings_file(&dir.join("home"), user);
    let project = settings_file(&dir.join("project"), project);
    let store = dir.join("home/.musepi/trusted.json");
    let sources = SettingsSources::default()
        .with_user(&user)
        .with_project(&project)
        .with_trust(&store);
    Layout {
        user,
        project,
        store,
        sources,
    }
}

impl Layout {
    /// Records in the trust store that the project's file is trusted while
    /// it holds `content`.
    fn trust(&self, content: &[u8]) {
        let approval = Trusted {
            sha256: sha256_hex(content),
            trusted_at: "2026-01-01T00:00:00.000Z".into(),
        };
        TrustStore::update(
            &self.store,
            &key_for(&self.project).unwrap(),
            Some(approval),
        )
        .unwrap();
    }
}

fn warning(file: &Path, key: &str, message: &str) -> SettingsWarning {
    SettingsWarning {
        file: file.to_path_buf(),
        key: key.to_owned(),
        message: message.to_owned(),
    }
}

#[test]
fn defaults_follow_the_design_era_table() {
    let loaded = merge_layers(Vec::new());
    assert!(loaded.warnings.is_empty());
    let s = loaded.settings;
    assert_eq!(s, Settings::default());
    // The files set nothing: every key is unset, and what the runtime reads
    // is its own defaults.
    assert_eq!(s.compaction, CompactionSettings::default());
    assert_eq!(s.branch_summary.skip_prompt, None);
    let m = s.maintenance(200_000);
    assert_eq!(m, {
        let mut d = musepi_runtime::MaintenanceSettings::default();
        d.context_window = 200_000;
        d.snapcompact.serialize = s.snapcompact.serialize_options();
        d.snapcompact.reserve_tokens = d.compaction.reserve_tokens;
        d
    });
    let c = &m.compaction;
    assert!(c.enabled && m.auto_continue && m.mid_turn_enabled && m.remote_enabled);
    assert_eq!(m.strategy, MaintenanceStrategy::Snapcompact);
    assert_eq!((c.reserve_tokens, c.keep_recent_tokens), (16384, 20000));
    assert_eq!((c.threshold_percent, c.threshold_tokens), (-1.0, -1.0));
    assert_eq!(s.compaction.remote_endpoint, None);
    assert!(!m.idle_enabled);
    assert_eq!(
        (m.idle_threshold_tokens, m.idle_timeout_seconds),
        (200_000, 300)
    );
    assert!(m.drop_useless && m.supersede_reads);
    assert!(!m.branch_summary_enabled);
    assert_eq!(m.branch_summary_reserve_tokens, 16384);
    assert!(!m.context_promotion);
    // No snapcompact key set: the archive's own defaults, mapped once.
    let snap = &s.snapcompact;
    assert_eq!(*snap, SnapcompactSettings::default());
    assert_eq!(m.snapcompact_shape, None);
    let o = snap.serialize_options();
    assert_eq!(
        (
            o.tool_result_max_chars,
            o.tool_arg_max_chars,
            o.tool_call_max_chars
        ),
        (Some(2000), Some(500), Some(2000))
    );
    assert!(o.dim_tool_results);
    assert!((o.truncate_head_ratio - 0.6).abs() < f64::EPSILON);
    assert!(s.providers.is_empty() && s.hooks.is_empty());
}

#[test]
fn files_merge_user_then_project_then_explicit() {
    let dir = tempfile::tempdir().unwrap();
    let files = user_and_project(
        dir.path(),
        &json!({
            "compaction": {"reserveTokens": 1000, "keepRecentTokens": 5000, "remoteEndpoint": "http://a"},
            "providers": {"work": {"kind": "anthropic", "model": "m1", "maxTokens": 64000}},
            "hooks": {"session_before_compact": [{"command": ["a"]}]},
        }),
        &json!({
            "compaction": {"reserveTokens": 2000},
            "providers": {"work": {"model": "m2"}},
            "hooks": {"session_before_compact": [{"command": ["b", "--flag"], "timeoutMs": 500, "env": ["HOME"]}]},
        }),
    );
    let explicit = write(
        dir.path(),
        "explicit.json",
        &json!({"compaction": {"strategy": "context-full", "remoteEndpoint": null}, "branchSummary": {"enabled": true}}),
    );
    // The project file is trusted with this content.
    files.trust(&std::fs::read(&files.project).unwrap());
    let loaded = load_settings(&files.sources.with_explicit(&explicit)).unwrap();
    assert_eq!(loaded.warnings, []);
    assert_eq!(loaded.untrusted, None);
    assert_eq!(loaded.files, [files.user, files.project, explicit]);
    let s = loaded.settings;
    assert_eq!(s.compaction.reserve_tokens, Some(2000));
    assert_eq!(s.compaction.keep_recent_tokens, Some(5000));
    assert_eq!(
        s.compaction.strategy,
        Some(MaintenanceStrategy::ContextFull)
    );
    assert_eq!(s.compaction.remote_endpoint, None);
    assert_eq!(s.branch_summary.enabled, Some(true));
    assert_eq!(
        s.providers["work"],
        ProviderEntry {
            kind: Some(ProviderKind::Anthropic),
            model: Some("m2".into()),
            max_tokens: Some(64000),
            ..ProviderEntry::default()
        }
    );
    assert_eq!(
        s.hooks["session_before_compact"],
        [HookCommand {
            command: vec!["b".into(), "--flag".into()],
            timeout_ms: Some(500),
            env: vec!["HOME".into()],
            on_failure: None,
        }]
    );
}

#[test]
fn discovery_uses_the_working_directory_and_skips_missing_files() {
    let dir = tempfile::tempdir().unwrap();
    settings_file(dir.path(), &json!({"compaction": {"enabled": false}}));
    let sources = SettingsSources::discover(dir.path(), None);
    assert_eq!(
        sources.project(),
        Some(dir.path().join(".musepi/settings.json").as_path())
    );
    let sources = sources.with_user(dir.path().join("nowhere/settings.json"));
    let loaded = load_settings(&sources).unwrap();
    assert_eq!(loaded.settings.compaction.enabled, Some(false));
    assert_eq!(loaded.files.len(), 1);
}

#[test]
fn wrongly_typed_values_warn_and_fall_back() {
    let base = PathBuf::from("/home/u/.musepi/settings.json");
    let file = PathBuf::from("/work/.musepi/settings.json");
    let loaded = merge_layers(vec![
        (
            base.clone(),
            json!({"compaction": {"keepRecentTokens": 9000}}),
        ),
        (
            file.clone(),
            json!({
                "compaction": {
                    "reserveTokens": "big",
                    "keepRecentTokens": -5,
                    "strategy": "fast",
                    "idleEnabled": true,
                    "remoteEndpoint": {"url": "x"},
                },
                "snapcompact": 5,
                "branchSummary": {"reserveTokens": 1.5},
                "providers": {"x": {"kind": "grpc", "model": "m", "timeoutMs": "soon"}},
                "hooks": {"session_compact": "run.sh"},
                "theme": {"colour": "blue"},
            }),
        ),
    ]);
    let keys: Vec<&str> = loaded.warnings.iter().map(|w| w.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            // A key the settings do not have is named too (it was ignored
            // without a word).
            "theme",
            "compaction.reserveTokens",
            "compaction.keepRecentTokens",
            "compaction.strategy",
            "compaction.remoteEndpoint",
            "snapcompact",
            "branchSummary.reserveTokens",
            "providers.x.kind",
            "providers.x.timeoutMs",
            "hooks.session_compact",
        ]
    );
    assert!(loaded.warnings.iter().all(|w| w.file == file));
    assert_eq!(
        loaded.warnings[0].to_string(),
        "/work/.musepi/settings.json: theme: unknown key; value ignored"
    );
    assert_eq!(
        loaded.warnings[1].to_string(),
        "/work/.musepi/settings.json: compaction.reserveTokens: invalid type: string \"big\", expected u64; value ignored"
    );
    assert!(
        loaded.warnings[3]
            .message
            .contains("unknown variant `fast`")
    );
    let s = loaded.settings;
    assert_eq!(s.compaction.reserve_tokens, None, "the default");
    assert_eq!(
        s.compaction.keep_recent_tokens,
        Some(9000),
        "the earlier file's valid value stays"
    );
    assert_eq!(s.compaction.strategy, None);
    assert_eq!(
        s.compaction.idle_enabled,
        Some(true),
        "valid neighbours are kept"
    );
    assert_eq!(s.snapcompact, Settings::default().snapcompact);
    assert_eq!(s.providers["x"].kind, None);
    assert_eq!(s.providers["x"].model.as_deref(), Some("m"));
    assert!(s.hooks.is_empty());
}

#[test]
fn caps_accept_counts_null_and_infinity() {
    let loaded = merge_layers(vec![(
        PathBuf::from("s.json"),
        json!({"snapcompact": {"toolResultMaxChars": null, "toolArgMaxChars": "Infinity", "toolCallMaxChars": 100,
                               "systemPrompt": "agents-md", "shape": "8on22-bw"}}),
    )]);
    assert_eq!(loaded.warnings, []);
    let snap = loaded.settings.snapcompact;
    assert_eq!(
        (
            snap.tool_result_max_chars,
            snap.tool_arg_max_chars,
            snap.tool_call_max_chars
        ),
        (Some(Cap(None)), Some(Cap(None)), Some(Cap(Some(100))))
    );
    assert_eq!(snap.system_prompt, Some(SystemPromptImaging::AgentsMd));
    assert_eq!(snap.shape.as_deref(), Some("8on22-bw"));
    // A cap set to none is no cap; an unset one is the archive's default.
    let o = snap.serialize_options();
    assert_eq!(
        (
            o.tool_result_max_chars,
            o.tool_arg_max_chars,
            o.tool_call_max_chars
        ),
        (None, None, Some(100))
    );
}

#[test]
fn a_cap_set_to_none_survives_the_settings_written_back_and_merged_again() {
    // `musepi serve`'s `open` merges its `settings` over the settings
    // written back as JSON: an unset cap must stay unset (the default),
    // one set to none must stay none.
    let first = merge_layers(vec![(
        PathBuf::from("s.json"),
        json!({"snapcompact": {"toolArgMaxChars": null}}),
    )]);
    let base = serde_json::to_value(&first.settings).unwrap();
    let again = merge_layers(vec![
        (PathBuf::from("<settings>"), base),
        (
            PathBuf::from("<open>"),
            json!({"snapcompact": {"dimToolResults": false}}),
        ),
    ]);
    let o = again.settings.snapcompact.serialize_options();
    assert_eq!(
        (o.tool_result_max_chars, o.tool_arg_max_chars),
        (Some(2000), None)
    );
    assert!(!o.dim_tool_results);
}

#[test]
fn broken_files_warn_unless_explicit() {
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, "{ not json").unwrap();
    let array = write(dir.path(), "array.json", &json!([1, 2]));
    let loaded = load_settings(
        &SettingsSources::default()
            .with_user(&broken)
            .with_project(&array),
    )
    .unwrap();
    assert_eq!(loaded.warnings.len(), 2);
    assert_eq!(loaded.warnings[0].key, "");
    assert!(loaded.warnings[0].message.starts_with("not valid JSON"));
    assert_eq!(
        loaded.warnings[1],
        warning(&array, "", "the top level is not a JSON object")
    );
    assert_eq!(loaded.settings, Settings::default());

    let explicit = |path: PathBuf| SettingsSources::default().with_explicit(path);
    let missing = load_settings(&explicit(dir.path().join("missing.json"))).unwrap_err();
    assert!(matches!(missing, SettingsError::Read { .. }));
    assert!(missing.to_string().starts_with("cannot read settings file"));
    let invalid = load_settings(&explicit(broken)).unwrap_err();
    assert!(matches!(invalid, SettingsError::Json { .. }));
}

// ---------------------------------------------------------------- providers

/// Environment variables, `(name, value)`.
type Vars = &'static [(&'static str, &'static str)];

/// An environment holding just `pairs`.
fn env(pairs: Vars) -> impl Fn(&str) -> Option<String> {
    move |name| {
        pairs
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| (*v).to_owned())
    }
}

fn flags(provider: Option<&str>, base_url: Option<&str>, model: Option<&str>) -> ProviderFlags {
    ProviderFlags {
        provider: provider.map(str::to_owned),
        base_url: base_url.map(str::to_owned),
        model: model.map(str::to_owned),
        deadline: None,
    }
}

/// The configuration `flags` resolve to with the settings `s` and the
/// environment `vars`.
fn resolved(flags: &ProviderFlags, s: &Settings, vars: Vars) -> ProviderConfig {
    musepi_providers::resolve_config(flags, &s.provider_settings(), &env(vars)).unwrap()
}

/// Why `flags` do not resolve with the settings `s` and the environment
/// `vars`.
fn refused(flags: &ProviderFlags, s: &Settings, vars: Vars) -> ProviderError {
    musepi_providers::resolve_config(flags, &s.provider_settings(), &env(vars)).unwrap_err()
}

fn settings(value: Value) -> Settings {
    let loaded = merge_layers(vec![(PathBuf::from("s.json"), value)]);
    assert_eq!(loaded.warnings, []);
    loaded.settings
}

#[test]
fn a_kind_with_flags_uses_official_urls_and_environment_keys() {
    let s = Settings::default();
    let config = resolved(
        &flags(Some("anthropic"), None, Some("claude-x")),
        &s,
        &[("ANTHROPIC_API_KEY", "ak"), ("MUSEPI_API_KEY", "mk")],
    );
    assert_eq!(config.kind(), ProviderKind::Anthropic);
    assert_eq!(config.name(), "anthropic");
    assert_eq!(config.base_url(), "https://api.anthropic.com");
    assert_eq!(config.model(), Some("claude-x"));
    assert_eq!(config.api_key(), Some(&ApiKey::new("ak")));
    assert!(!format!("{config:?}").contains("ak\""));

    let fallback = resolved(
        &flags(Some("openai-responses"), None, Some("gpt")),
        &s,
        &[("MUSEPI_API_KEY", "mk")],
    );
    assert_eq!(fallback.base_url(), "https://api.openai.com/v1");
    assert_eq!(fallback.api_key(), Some(&ApiKey::new("mk")));

    let error = refused(&flags(Some("anthropic"), None, Some("claude-x")), &s, &[]);
    assert_eq!(
        error.to_string(),
        "no API key for anthropic: set ANTHROPIC_API_KEY or MUSEPI_API_KEY"
    );

    let local = resolved(
        &flags(
            Some("openai-compatible"),
            Some("http://127.0.0.1:8080/v1"),
            Some("qwen"),
        ),
        &s,
        &[],
    );
    assert_eq!(local.api_key(), None, "a local server needs no key");

    // A vendor's key never goes to another server; musepi's own key does.
    let elsewhere = |vars: Vars| {
        resolved(
            &flags(
                Some("openai-compatible"),
                Some("http://127.0.0.1:8080/v1"),
                Some("qwen"),
            ),
            &s,
            vars,
        )
        .api_key()
        .cloned()
    };
    assert_eq!(elsewhere(&[("OPENAI_API_KEY", "vendor")]), None);
    assert_eq!(
        elsewhere(&[("OPENAI_API_KEY", "vendor"), ("MUSEPI_API_KEY", "own")]),
        Some(ApiKey::new("own"))
    );

    let error = refused(
        &flags(Some("openai-compatible"), None, None),
        &s,
        &[("OPENAI_API_KEY", "k")],
    );
    assert!(matches!(error, ProviderError::MissingModel { .. }));
    let error = refused(
        &flags(Some("anthropic"), Some("ftp://x"), Some("m")),
        &s,
        &[],
    );
    assert!(
        error
            .to_string()
            .starts_with("invalid URL `ftp://x` for provider `anthropic`")
    );
}

#[test]
fn a_named_entry_sets_everything_and_flags_override_it() {
    let s = settings(json!({"providers": {
        "local": {"kind": "openai-compatible", "baseUrl": "http://10.0.0.2:8000/v1", "model": "llama",
                  "apiKeyEnv": "LOCAL_KEY", "maxTokens": 4096, "reasoning": "off", "timeoutMs": 30000,
                  "maxRetries": 0, "contextWindow": 32768, "vision": true, "developerRole": "system"},
        "other": {"kind": "anthropic", "model": "claude"},
    }}));
    let config = resolved(
        &flags(Some("local"), None, None),
        &s,
        &[("LOCAL_KEY", "lk")],
    );
    assert_eq!(config.name(), "local");
    assert_eq!(config.kind(), ProviderKind::OpenaiCompatible);
    assert_eq!(config.base_url(), "http://10.0.0.2:8000/v1");
    assert_eq!(config.model(), Some("llama"));
    assert_eq!(config.api_key(), Some(&ApiKey::new("lk")));
    assert_eq!(config.max_tokens(), Some(4096));
    assert_eq!(config.reasoning_for(Some("high")), None);
    assert_eq!(config.timing().timeout, Duration::from_secs(30));
    assert_eq!(config.timing().retry.max_attempts, 1);
    assert_eq!(config.context_window(), Some(32768));
    assert!(config.vision());
    assert_eq!(config.developer_role(), DeveloperRole::System);
    assert_eq!(
        config.describe(),
        "local (openai-compatible llama at http://10.0.0.2:8000/v1)"
    );

    let overridden = resolved(
        &flags(
            Some("local"),
            Some("http://127.0.0.1:9/v1"),
            Some("mistral"),
        ),
        &s,
        &[("LOCAL_KEY", "lk")],
    );
    assert_eq!(
        (overridden.base_url(), overridden.model()),
        ("http://127.0.0.1:9/v1", Some("mistral"))
    );

    let error = refused(
        &flags(Some("local"), None, None),
        &s,
        &[("OPENAI_API_KEY", "k")],
    );
    assert_eq!(
        error.to_string(),
        "environment variable LOCAL_KEY named by providers.local.apiKeyEnv is not set"
    );

    let error = refused(&flags(Some("nope"), None, None), &s, &[]);
    assert_eq!(
        error.to_string(),
        "unknown provider `nope`: use a kind (openai-compatible, openai-responses, anthropic, remote-endpoint) or a name from the settings' providers map (settings providers: local, other)"
    );
    let error = refused(&flags(None, None, None), &s, &[]);
    assert!(matches!(error, ProviderError::NoProviderSelected { .. }));
}

#[test]
fn without_provider_flag_the_only_entry_or_the_base_url_decides() {
    let single = settings(
        json!({"providers": {"only": {"kind": "openai-responses", "model": "gpt", "baseUrl": "http://h/v1"}}}),
    );
    let config = resolved(&flags(None, None, None), &single, &[]);
    assert_eq!(
        (config.name(), config.kind()),
        ("only", ProviderKind::OpenaiResponses)
    );

    let config = resolved(
        &flags(None, Some("http://127.0.0.1:8080/v1"), Some("m")),
        &Settings::default(),
        &[],
    );
    assert_eq!(config.kind(), ProviderKind::OpenaiCompatible);

    let error = refused(&flags(None, None, None), &Settings::default(), &[]);
    assert_eq!(
        error.to_string(),
        "no provider selected: pass --provider KIND|NAME (or --base-url for an openai-compatible server)"
    );

    let nameless = settings(json!({"providers": {"x": {"model": "m"}}}));
    let error = refused(&flags(Some("x"), None, None), &nameless, &[]);
    assert_eq!(
        error.to_string(),
        "provider `x` has no kind: set providers.x.kind"
    );
}

#[test]
fn the_remote_endpoint_comes_from_compaction_settings() {
    let s = settings(json!({"compaction": {"remoteEndpoint": "http://127.0.0.1:7000/summarize"}}));
    let config = resolved(&flags(Some("remote-endpoint"), None, None), &s, &[]);
    assert_eq!(config.base_url(), "http://127.0.0.1:7000/summarize");
    assert_eq!(config.model(), None);
    assert_eq!(config.api_key(), None);
    let error = refused(
        &flags(Some("remote-endpoint"), None, None),
        &Settings::default(),
        &[],
    );
    assert!(matches!(error, ProviderError::MissingBaseUrl { .. }));
}

#[test]
fn resolution_builds_a_ready_provider_without_touching_the_network() {
    let s = settings(
        json!({"providers": {"own": {"kind": "anthropic", "model": "claude", "connectTimeoutMs": 500}}}),
    );
    let provider = musepi_providers::resolve_provider(
        &flags(Some("own"), None, None),
        &s.provider_settings(),
        &env(&[("ANTHROPIC_API_KEY", "secret-key-value")]),
    )
    .unwrap();
    assert_eq!(
        provider.describe(),
        "own (anthropic claude at https://api.anthropic.com/)"
    );
    assert!(!format!("{provider:?}").contains("secret-key-value"));
    let shared = musepi_providers::resolve_provider(
        &flags(
            Some("openai-compatible"),
            Some("http://user:pw@127.0.0.1:1/v1?key=x"),
            Some("m"),
        ),
        &s.provider_settings(),
        &env(&[]),
    )
    .unwrap();
    assert_eq!(
        shared.describe(),
        "openai-compatible m at http://127.0.0.1:1/v1"
    );
}

#[test]
fn a_key_a_header_cannot_carry_is_refused_naming_its_variable() {
    let s = settings(json!({"providers": {
        "own": {"kind": "openai-compatible", "baseUrl": "http://127.0.0.1:9/v1", "model": "m", "apiKeyEnv": "OWN_KEY"},
    }}));
    let cases: [(&str, &str, &str, &str); 5] = [
        ("OWN_KEY", "sk-abc\r\nX-Injected: 1", "a line break", "7"),
        ("OWN_KEY", "sk-abc\n", "a line break", "7"),
        ("OWN_KEY", "sk abc", "a space", "3"),
        ("OWN_KEY", "sk-\u{7f}", "a control character", "4"),
        ("OWN_KEY", "sk-é", "a character that is not ASCII", "4"),
    ];
    for (variable, key, what, position) in cases {
        let lookup = |name: &str| (name == variable).then(|| key.to_owned());
        let error = musepi_providers::resolve_config(
            &flags(Some("own"), None, None),
            &s.provider_settings(),
            &lookup,
        )
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "the API key in {variable} holds {what} at character {position}, which an HTTP header cannot carry; nothing was sent (check the variable for a stray line break)"
            ),
            "{key:?}"
        );
        assert!(!error.to_string().contains("sk-"), "the key is never shown");
    }
    // The vendor's and musepi's own variables are checked the same way.
    let vendor = refused(
        &flags(Some("anthropic"), None, Some("claude-x")),
        &Settings::default(),
        &[("ANTHROPIC_API_KEY", "ak\n")],
    );
    assert!(
        matches!(vendor, ProviderError::InvalidKey { ref variable, .. } if variable == "ANTHROPIC_API_KEY")
    );
    let own = refused(
        &flags(
            Some("openai-compatible"),
            Some("http://127.0.0.1:9/v1"),
            Some("m"),
        ),
        &Settings::default(),
        &[("MUSEPI_API_KEY", "k\r")],
    );
    assert!(
        matches!(own, ProviderError::InvalidKey { ref variable, .. } if variable == "MUSEPI_API_KEY")
    );
}

#[test]
fn the_deadline_comes_from_the_flag_then_the_entry_then_the_default() {
    let s = settings(json!({"providers": {
        "slow": {"kind": "openai-compatible", "baseUrl": "http://127.0.0.1:9/v1", "model": "m", "deadlineMs": 5000},
        "capped": {"kind": "openai-compatible", "baseUrl": "http://127.0.0.1:9/v1", "model": "m", "deadlineMs": 5000, "timeoutMs": 1000},
    }}));
    let config = |name: &str, flag: Option<Duration>| {
        let mut f = flags(Some(name), None, None);
        f.deadline = flag;
        resolved(&f, &s, &[]).timing().clone()
    };
    let default = resolved(
        &flags(
            Some("openai-compatible"),
            Some("http://127.0.0.1:9/v1"),
            Some("m"),
        ),
        &s,
        &[],
    );
    assert_eq!(
        (default.timing().deadline, default.timing().timeout),
        (Duration::from_mins(2), Duration::from_mins(2))
    );
    let entry = config("slow", None);
    assert_eq!(
        (entry.deadline, entry.timeout),
        (Duration::from_secs(5), Duration::from_secs(5))
    );
    let flag = config("slow", Some(Duration::from_millis(300)));
    assert_eq!(flag.deadline, Duration::from_millis(300));
    let capped = config("capped", None);
    assert_eq!(
        (capped.deadline, capped.timeout),
        (Duration::from_secs(5), Duration::from_secs(1))
    );
}

#[test]
fn an_untrusted_project_file_keeps_only_its_harmless_settings() {
    let dir = tempfile::tempdir().unwrap();
    let files = user_and_project(
        dir.path(),
        &json!({"providers": {"mine": {"kind": "anthropic", "model": "m"}}}),
        &json!({
            "compaction": {"reserveTokens": 2000, "remoteEndpoint": "https://x.example/s", "strategy": "context-full"},
            "branchSummary": {"enabled": true},
            "providers": {"theirs": {"kind": "openai-compatible", "baseUrl": "https://x.example/v1", "apiKeyEnv": "OPENAI_API_KEY"}},
            "hooks": {"session_tree": [{"command": ["./x"]}]},
        }),
    );
    let loaded = load_settings(&files.sources).unwrap();
    let s = &loaded.settings;
    assert_eq!(s.compaction.reserve_tokens, Some(2000));
    assert_eq!(
        s.compaction.strategy,
        Some(MaintenanceStrategy::ContextFull)
    );
    assert_eq!(s.branch_summary.enabled, Some(true));
    assert_eq!(s.compaction.remote_endpoint, None);
    assert_eq!(s.providers.keys().collect::<Vec<_>>(), ["mine"]);
    assert!(s.hooks.is_empty());
    assert_eq!(
        loaded.untrusted,
        Some(Untrusted {
            file: files.project.clone(),
            changed: false,
            ignored: vec![
                "compaction.remoteEndpoint".into(),
                "providers".into(),
                "hooks".into()
            ],
        })
    );

    // Trusted with other content: still ignored, and said so.
    files.trust(b"{}");
    let loaded = load_settings(&files.sources).unwrap();
    assert!(loaded.untrusted.as_ref().is_some_and(|u| u.changed));
    assert!(loaded.settings.hooks.is_empty());

    // A project file with nothing that needs trust says nothing.
    std::fs::write(&files.project, r#"{"compaction": {"reserveTokens": 3000}}"#).unwrap();
    let loaded = load_settings(&files.sources).unwrap();
    assert_eq!(loaded.untrusted, None);
    assert_eq!(loaded.settings.compaction.reserve_tokens, Some(3000));

    // Without a trust store nothing is trusted.
    std::fs::write(
        &files.project,
        r#"{"hooks": {"session_tree": [{"command": ["./x"]}]}}"#,
    )
    .unwrap();
    let loaded = load_settings(&files.sources.clone().without_trust()).unwrap();
    assert!(loaded.settings.hooks.is_empty());
    assert!(loaded.untrusted.is_some());
}

#[test]
fn the_home_folders_own_file_is_not_a_project_file() {
    let dir = tempfile::tempdir().unwrap();
    let user = settings_file(
        dir.path(),
        &json!({"hooks": {"session_tree": [{"command": ["./mine"]}]}}),
    );
    // Working in the home folder: the one file is the user's, and trusted.
    let sources = SettingsSources::default()
        .with_user(&user)
        .with_project(&user)
        .with_trust(dir.path().join(".musepi/trusted.json"));
    let loaded = load_settings(&sources).unwrap();
    assert_eq!(loaded.untrusted, None);
    assert_eq!(loaded.settings.hooks["session_tree"].len(), 1);
    assert_eq!(loaded.files, [user]);
}

#[test]
fn null_unsets_a_key_and_what_no_file_sets_is_the_runtime_default() {
    let loaded = merge_layers(vec![
        (
            PathBuf::from("user.json"),
            json!({"compaction": {"reserveTokens": 2000, "keepRecentTokens": 5000, "thresholdTokens": 150_000}}),
        ),
        (
            PathBuf::from("project.json"),
            json!({"compaction": {"reserveTokens": null}}),
        ),
    ]);
    assert_eq!(loaded.warnings, []);
    let c = &loaded.settings.compaction;
    assert_eq!((c.reserve_tokens, c.keep_recent_tokens), (None, Some(5000)));
    let m = loaded.settings.maintenance(100_000);
    let defaults = musepi_runtime::MaintenanceSettings::default();
    assert_eq!(
        m.compaction.reserve_tokens,
        defaults.compaction.reserve_tokens
    );
    assert_eq!(m.compaction.keep_recent_tokens, 5000);
    assert_eq!(m.compaction.threshold_tokens, 150_000.0);
    assert_eq!(m.context_window, 100_000);
}
