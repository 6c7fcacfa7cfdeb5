//! GEMMs named by their role in the model (`gpuprof report --model config.json`), end
//! to end on the simulated H100: cudarc-llm runs with the dimensions of a public
//! model's config.json (`tests/models/`: TinyLlama-1.1B, Llama-style grouped-query
//! attention; Qwen3-0.6B, a head size of its own; OLMoE-1B-7B, 64 experts, 8 per token,
//! run as grouped GEMMs), 2 layers, a 16-token prompt and 2 decode steps. The test
//! works out from the config's numbers alone which GEMMs the workload calls and what
//! each one is, and checks every shape's role, each role's calls per forward pass and
//! its model FLOPs (2·M·N·K·batch per call) in the report.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::Duration;

use gpuprof_tests::{
    artifact, gpuprof_command, read_perfetto_trace, record_session_on_sim, Scratch, TimedChild,
};
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(120);
const LAYERS: u64 = 2;
const PROMPT: u64 = 16;
const STEPS: u64 = 2;

fn model_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("models")
        .join(name)
}

/// A recorded session: its scratch directory (removed when dropped) and the session.
struct Session {
    _scratch: Scratch,
    dir: PathBuf,
}

/// cudarc-llm with `config`'s dimensions, recorded; `gpuprof report --format json
/// --model config` and the table, and the config.
fn run(name: &str, extra: &[&str]) -> (Value, String, Value) {
    let (r, text, c, _) = run_kept(name, extra);
    (r, text, c)
}

/// [`run`], the session kept.
fn run_kept(name: &str, extra: &[&str]) -> (Value, String, Value, Session) {
    let config = model_file(name);
    let scratch = Scratch::new(&format!("model-roles-{name}"));
    let out = scratch.join("out");
    let mut workload: Vec<OsString> = vec![artifact("cudarc-llm").into(), "--config".into()];
    workload.push(config.clone().into());
    for (flag, v) in [
        ("--layers", LAYERS),
        ("--prompt", PROMPT),
        ("--decode-steps", STEPS),
    ] {
        workload.extend([flag.into(), v.to_string().into()]);
    }
    let workload: Vec<&OsStr> = workload.iter().map(OsString::as_os_str).collect();
    let cmd = record_session_on_sim(&out, "13.4", &[], &workload);
    let o = TimedChild::spawn(cmd, LIMIT).wait();
    assert!(o.status.success(), "gpuprof record: {o:?}");
    let report = |format: &str| {
        let mut cmd = gpuprof_command();
        cmd.args(["report", "--format", format, "--model"])
            .arg(&config)
            .args(extra)
            .arg(&out);
        let r = TimedChild::spawn(cmd, LIMIT).wait();
        assert!(r.status.success(), "gpuprof report: {r:?}");
        r.stdout
    };
    let json: Value = serde_json::from_str(&report("json")).unwrap();
    let text = report("table");
    let c: Value = serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    let session = Session {
        _scratch: scratch,
        dir: out,
    };
    (json, text, c, session)
}

/// One GEMM the workload calls: cuBLAS's (M, N, K, batch), its role, and its calls
/// in prefill and in decode.
struct Call {
    shape: (u64, u64, u64, u64),
    role: &'static str,
    prefill: u64,
    decode: u64,
}

/// The GEMMs cudarc-llm calls with `c`'s dimensions (tests/workloads/cudarc-llm): per
/// layer QKV, the prompt's attention scores (prefill), the output projection and the
/// MLP (dense: gate and up fused, down; experts: the router, then per projection one
/// strided-batched GEMM over the experts given tokens, each token to k experts spread
/// evenly), and the LM head on one token per forward pass.
fn calls(c: &Value) -> Vec<Call> {
    let n = |k: &str| c[k].as_u64();
    let hidden = n("hidden_size").unwrap();
    let heads = n("num_attention_heads").unwrap();
    let kv = n("num_key_value_heads").unwrap_or(heads);
    let d = n("head_dim").unwrap_or(hidden / heads);
    let mut out = Vec::new();
    let mut layer = |shape: (u64, u64, u64, u64), role, tokens: u64| {
        let (prefill, decode) = if tokens == PROMPT {
            (LAYERS, 0)
        } else {
            (0, LAYERS * STEPS)
        };
        out.push(Call {
            shape,
            role,
            prefill,
            decode,
        });
    };
    for tokens in [PROMPT, 1] {
        layer(
            ((heads + 2 * kv) * d, tokens, hidden, 1),
            "qkv_proj",
            tokens,
        );
        if tokens == PROMPT {
            layer((tokens, tokens, d, heads), "attn_scores", tokens);
        }
        layer((hidden, tokens, heads * d, 1), "o_proj", tokens);
        match n("num_experts") {
            None => {
                let i = n("intermediate_size").unwrap();
                layer((2 * i, tokens, hidden, 1), "gate_up_proj", tokens);
                layer((hidden, tokens, i, 1), "down_proj", tokens);
            }
            Some(e) => {
                let i = n("intermediate_size").unwrap();
                let slots = tokens * n("num_experts_per_tok").unwrap();
                let active = e.min(slots);
                let per = slots.div_ceil(active);
                layer((e, tokens, hidden, 1), "router", tokens);
                layer((2 * i, per, hidden, active), "experts.gate_up", tokens);
                layer((hidden, per, i, active), "experts.down", tokens);
            }
        }
    }
    out.push(Call {
        shape: (n("vocab_size").unwrap(), 1, hidden, 1),
        role: "lm_head",
        prefill: 1,
        decode: STEPS,
    });
    out
}

/// Every shape of the report's model_roles with its roles, as (M, N, K, batch).
fn shape_roles(r: &Value) -> BTreeMap<(u64, u64, u64, u64), String> {
    r["model_roles"]["shapes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let n = |k: &str| s[k].as_u64().unwrap();
            let roles: Vec<&str> = s["roles"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_str().unwrap())
                .collect();
            ((n("m"), n("n"), n("k"), n("batch")), roles.join("|"))
        })
        .collect()
}

fn row<'a>(r: &'a Value, scope: &str, role: &str) -> &'a Value {
    r["model_roles"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["scope"] == scope && x["role"] == role)
        .unwrap_or_else(|| panic!("no row {scope} {role}: {:#}", r["model_roles"]["rows"]))
}

fn check(name: &str) {
    let (r, text, c, session) = run_kept(name, &[]);
    let want = calls(&c);
    // Without the config the shapes alone give the same roles (attention's batched
    // GEMMs say scores or values, which the shape cannot tell apart), said inferred.
    let mut cmd = gpuprof_command();
    cmd.args(["report", "--format", "json"]).arg(&session.dir);
    let plain = TimedChild::spawn(cmd, LIMIT).wait();
    assert!(plain.status.success(), "gpuprof report: {plain:?}");
    let plain: Value = serde_json::from_str(&plain.stdout).unwrap();
    assert_eq!(plain["model_roles"]["roles_from"], "shapes", "{name}");
    let inferred: BTreeMap<_, _> = shape_roles(&plain)
        .into_iter()
        .map(|(s, r)| (s, r.replace("attn_scores|attn_values", "attn_scores")))
        .collect();
    assert_eq!(inferred, shape_roles(&r), "{name}: inferred");
    // Every GEMM gets the role the config implies, and nothing else ran.
    let expected: BTreeMap<(u64, u64, u64, u64), String> =
        want.iter().map(|w| (w.shape, w.role.to_string())).collect();
    assert_eq!(shape_roles(&r), expected, "{name}");
    let m = &r["model_roles"];
    assert_eq!(
        (m["tp"].as_u64(), &m["tp_source"]),
        (Some(1), &Value::from("inferred"))
    );
    assert_eq!(m["tp_fits"], serde_json::json!([1]), "{name}");
    // Per role: calls, calls per forward pass in decode (the layers, 1 for the LM
    // head), and model FLOPs over the run equal to the formula's.
    let mut by_role: BTreeMap<&str, (u64, u64, f64)> = BTreeMap::new();
    for w in &want {
        let (mm, nn, kk, b) = w.shape;
        let e = by_role.entry(w.role).or_default();
        e.0 += w.prefill;
        e.1 += w.decode;
        e.2 += 2.0 * (mm * nn * kk * b) as f64 * (w.prefill + w.decode) as f64;
    }
    for (role, (prefill, decode, flops)) in &by_role {
        let run = row(&r, "run", role);
        assert_eq!(
            run["calls"].as_u64(),
            Some(prefill + decode),
            "{name} {role}"
        );
        assert_eq!(
            run["model_flops"].as_f64(),
            Some(*flops),
            "{name} {role}: FLOPs"
        );
        assert_eq!(
            run["mfu_ns"], run["gpu_ns"],
            "{name} {role}: MFU covers it all"
        );
        if *decode > 0 {
            let per = row(&r, "decode", role)["per_forward"].as_f64();
            let layers = if *role == "lm_head" {
                1.0
            } else {
                LAYERS as f64
            };
            assert_eq!(per, Some(layers), "{name} {role}: per forward");
        }
    }
    // Why each shape is where it is: the decode GEMVs against the DRAM ceiling (at
    // it, or below it: the router's 64 outputs), the prompt's GEMMs on cuBLAS's
    // 128x128 tiles filling M·N of the whole tiles they need.
    for sh in r["roofline"]["shapes"].as_array().unwrap() {
        let rules: BTreeMap<&str, &str> = sh["verdicts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| (v["rule"].as_str().unwrap(), v["text"].as_str().unwrap()))
            .collect();
        let u = |k: &str| sh[k].as_u64().unwrap();
        if sh["kernels"].to_string().contains("tilesize128x128") {
            let whole = |d: u64| d.div_ceil(128) * 128;
            let fill = 100.0 * (u("m") * u("n")) as f64 / (whole(u("m")) * whole(u("n"))) as f64;
            assert!(
                rules["tile_padding"].contains(&format!("fills {fill:.1}% of its tiles")),
                "{name}: {sh:#}"
            );
        }
        if u("n") == 1 {
            let f = |k: &str| sh[k].as_f64().unwrap();
            let mbu = f("bytes") * 1e9 / f("gpu_ns") / f("dram_bytes_per_s");
            let (rule, said) = if mbu >= 0.6 {
                ("memory_bound", "memory-bound at")
            } else {
                ("memory_bound_slow", "memory-bound but at")
            };
            let said = format!("{said} {:.1}% of DRAM peak", mbu * 100.0);
            assert!(rules[rule].starts_with(&said), "{name}: {sh:#}");
        }
    }
    // The table names them too, within 120 columns.
    let section = &text[text
        .find("\nGEMMs by role in the model")
        .expect("the section")..];
    for role in by_role.keys() {
        assert!(
            section.contains(&format!("  {role} ")),
            "{name}: {role} in {section}"
        );
    }
    for line in text.lines() {
        assert!(line.chars().count() <= 120, "{name}: {line}");
    }
}

#[test]
fn tinyllama_gemms_get_their_roles() {
    check("tinyllama-1.1b.json");
}

#[test]
fn qwen3_gemms_get_their_roles() {
    check("qwen3-0.6b.json");
}

#[test]
fn olmoe_experts_run_as_grouped_gemms_get_their_roles() {
    check("olmoe-1b-7b.json");
}

/// `--tp` decides the degree: at TP 2 TinyLlama's TP-1 shapes fit fewer roles, and
/// the report says the degree was given.
#[test]
fn a_given_degree_is_used_and_said() {
    let (r, text, _) = run("tinyllama-1.1b.json", &["--tp", "2"]);
    let m = &r["model_roles"];
    assert_eq!(
        (m["tp"].as_u64(), &m["tp_source"]),
        (Some(2), &Value::from("given"))
    );
    assert!(text.contains("TP 2 (--tp)"), "{text}");
    // The LM head (vocab 32000 split 2 ways is 16000, not 32000) fits no role at TP 2.
    let roles = shape_roles(&r);
    assert_eq!(roles[&(32000, 1, 2048, 1)], "");
}

/// The Perfetto trace (`gpuprof trace --model`, read back with Perfetto's own
/// classes) gives every GEMM kernel its role, the report's for its shape, beside its
/// shape, model FLOPs and MFU.
#[test]
fn the_perfetto_trace_names_each_gemm_kernel_by_its_role() {
    let (r, _, _, session) = run_kept("qwen3-0.6b.json", &[]);
    let roles = shape_roles(&r);
    let trace = session.dir.join("roles.perfetto-trace");
    let mut cmd = gpuprof_command();
    cmd.args(["trace", "--model"])
        .arg(model_file("qwen3-0.6b.json"))
        .arg("-o")
        .arg(&trace)
        .arg(&session.dir);
    let o = TimedChild::spawn(cmd, LIMIT).wait();
    assert!(o.status.success(), "gpuprof trace: {o:?}");
    let t = read_perfetto_trace(&trace);
    let mut named = 0;
    for s in t["slices"].as_array().unwrap() {
        let a = &s["args"];
        let Some(m) = a["gemm_m"].as_u64() else {
            assert!(a["gemm_role"].is_null(), "{s}");
            continue;
        };
        let n = |k: &str| a[k].as_u64().unwrap();
        let shape = (m, n("gemm_n"), n("gemm_k"), n("gemm_batch"));
        assert_eq!(a["gemm_role"].as_str(), Some(roles[&shape].as_str()), "{s}");
        assert!(
            a["model_flops"].is_number() && a["mfu_pct"].is_number(),
            "{s}"
        );
        named += 1;
    }
    // Per forward pass: 2 layers of QKV, output, gate-up and down projections, the
    // prompt's attention scores, and the LM head; 1 prefill and 2 decode passes.
    assert_eq!(named, 2 * 5 + 1 + 2 * (2 * 4 + 1));
}

/// `--what-if tp=2,4` with the config: every single-role shape gets a row per degree
/// with the role's shape there from TinyLlama's dimensions (32 heads, 4 KV heads of
/// 64, MLP 5632, vocab 32000), the tokens as run; without `--model` it is an error.
#[test]
fn what_if_gives_each_role_at_other_tensor_parallel_degrees() {
    let (r, text, _) = run("tinyllama-1.1b.json", &["--what-if", "tp=2,4"]);
    let rows = r["what_if"]["rows"].as_array().unwrap();
    let at = |role: &str, tokens: u64, tp: u64| {
        rows.iter()
            .find(|x| x["role"] == role && x["tokens"] == tokens && x["tp"] == tp)
            .map(|x| {
                (
                    x["m"].as_u64().unwrap(),
                    x["k"].as_u64().unwrap(),
                    x["batch"].as_u64().unwrap(),
                )
            })
            .unwrap_or_else(|| panic!("no {role} row at {tokens} tokens, TP {tp}"))
    };
    for tokens in [1, PROMPT] {
        for t in [2, 4] {
            let kv = (4 / t).max(1) * 64;
            assert_eq!(at("qkv_proj", tokens, t), ((32 / t) * 64 + 2 * kv, 2048, 1));
            assert_eq!(at("o_proj", tokens, t), (2048, 32 / t * 64, 1));
            assert_eq!(at("gate_up_proj", tokens, t), (2 * 5632 / t, 2048, 1));
            assert_eq!(at("down_proj", tokens, t), (2048, 5632 / t, 1));
        }
    }
    assert_eq!(at("lm_head", 1, 4), (8000, 2048, 1));
    assert_eq!(at("attn_scores", PROMPT, 2), (PROMPT, 64, 16));
    // Each degree row is the roofline of its shape: FLOPs 2·M·N·K·batch.
    for x in rows.iter().filter(|x| x["tp"].is_u64()) {
        let u = |k: &str| x[k].as_u64().unwrap() as f64;
        assert_eq!(
            x["flops"].as_f64(),
            Some(2.0 * u("m") * u("tokens") * u("k") * u("batch"))
        );
        assert_eq!(x["tp_as_run"], 1);
    }
    assert!(text.contains("TP 4 (1x8000x2048)"), "{text}");

    let mut cmd = gpuprof_command();
    cmd.args(["report", "--what-if", "tp=2"])
        .arg(model_file("tinyllama-1.1b.json"));
    let o = TimedChild::spawn(cmd, LIMIT).wait();
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(
        o.stderr.contains("--what-if tp=... needs --model"),
        "{}",
        o.stderr
    );
}

/// A config that is missing, not JSON, a directory, endless (/dev/zero says it is
/// empty) or over the 4 MiB bound is an error naming it, exit 2, before any session
/// is read and without reading past the bound.
#[test]
fn a_bad_model_config_is_an_error_naming_it() {
    let scratch = Scratch::new("model-roles-bad-config");
    let not_json = scratch.join("not.json");
    std::fs::write(&not_json, "not json").unwrap();
    let big = scratch.join("big.json");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(5 << 20)
        .unwrap();
    let missing = scratch.join("missing.json");
    let cases: [(&Path, &str); 5] = [
        (&missing, "cannot read the model config"),
        (&not_json, "is not JSON"),
        (scratch.path(), "cannot read the model config"),
        (Path::new("/dev/zero"), "is over 4194304 bytes"),
        (&big, "is over 4194304 bytes"),
    ];
    for (config, says) in cases {
        let mut cmd = gpuprof_command();
        cmd.args(["report", "--model"])
            .arg(config)
            .arg(scratch.join("no-session"));
        let o = TimedChild::spawn(cmd, LIMIT).wait();
        assert_eq!(o.status.code(), Some(2), "{config:?}: {o:?}");
        assert!(
            o.stderr.contains(says) && o.stderr.contains(&config.display().to_string()),
            "{config:?}: {}",
            o.stderr
        );
        assert_eq!(o.stdout, "", "{config:?}");
    }
}
