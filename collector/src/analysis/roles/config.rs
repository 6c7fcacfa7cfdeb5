//! A model's dimensions from its Hugging Face `config.json` (`report --model`): what
//! the GEMM roles of [`super::matching`] are computed from.
//!
//! Keys read (a multimodal config's `text_config` when it has one): `hidden_size`,
//! `num_attention_heads`, `vocab_size` and `num_hidden_layers` (required);
//! `num_key_value_heads` (default: the attention heads), `head_dim` (default:
//! hidden / heads), `intermediate_size`; for a mixture of experts the expert count
//! (`num_local_experts` as Mixtral names it, `num_experts` as Qwen-MoE and OLMoE do,
//! `n_routed_experts` as DeepSeek does), `num_experts_per_tok`, an expert's inner size
//! (`moe_intermediate_size`, else `intermediate_size`) and a shared expert's
//! (`shared_expert_intermediate_size`, or DeepSeek's `n_shared_experts` ×
//! `moe_intermediate_size`). A dense MLP of `intermediate_size` is a role only where
//! the config gives the experts their own size (`moe_intermediate_size`: dense layers
//! beside MoE ones), or has no experts.

use std::io::Read;
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

/// The largest config file read: a config.json is a few kilobytes.
const MAX_CONFIG_BYTES: u64 = 4 << 20;

/// The dimensions of a decoder-only transformer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModelConfig {
    /// `model_type` (or the first of `architectures`), for the report's heading.
    pub name: String,
    pub hidden: u64,
    pub heads: u64,
    pub kv_heads: u64,
    pub head_dim: u64,
    pub vocab: u64,
    pub layers: u64,
    /// The dense MLP's inner size, where the model has a dense MLP.
    pub intermediate: Option<u64>,
    pub moe: Option<Moe>,
}

/// A mixture of experts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Moe {
    pub experts: u64,
    pub per_token: Option<u64>,
    /// One expert's inner size.
    pub intermediate: u64,
    /// The shared expert's inner size, if the model has one.
    pub shared_intermediate: Option<u64>,
}

impl ModelConfig {
    /// Reads `path`: a clear error naming the file and what is wrong.
    pub fn read(path: &Path) -> Result<ModelConfig, String> {
        let what = path.display();
        let cannot = |e: std::io::Error| format!("cannot read the model config {what}: {e}");
        // Read at most one byte past the bound, whatever the file says its size is
        // (a FIFO or /dev/zero says 0).
        let mut text = String::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_CONFIG_BYTES + 1).read_to_string(&mut text))
            .map_err(cannot)?;
        if text.len() as u64 > MAX_CONFIG_BYTES {
            return Err(format!(
                "the model config {what} is over {MAX_CONFIG_BYTES} bytes: a config.json is a \
                 few kilobytes"
            ));
        }
        let v: Value = serde_json::from_str(&text)
            .map_err(|e| format!("the model config {what} is not JSON: {e}"))?;
        ModelConfig::of(&v).map_err(|e| format!("the model config {what}: {e}"))
    }

    /// The dimensions in a parsed config.json.
    pub fn of(v: &Value) -> Result<ModelConfig, String> {
        let v = v.get("text_config").filter(|t| t.is_object()).unwrap_or(v);
        if !v.is_object() {
            return Err("not a JSON object (a Hugging Face config.json is one)".to_string());
        }
        let get = |key: &str| -> Result<Option<u64>, String> {
            match v.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(x) => match x.as_u64() {
                    Some(n) if n > 0 => Ok(Some(n)),
                    _ => Err(format!("{key:?} is {x}, not a positive integer")),
                },
            }
        };
        let need = |key: &str| -> Result<u64, String> {
            get(key)?.ok_or_else(|| {
                format!(
                    "no {key:?} (gpuprof reads hidden_size, num_attention_heads, \
                     num_key_value_heads, head_dim, intermediate_size, vocab_size, \
                     num_hidden_layers and the MoE keys of a decoder model's config.json)"
                )
            })
        };
        let hidden = need("hidden_size")?;
        let heads = need("num_attention_heads")?;
        let kv_heads = get("num_key_value_heads")?.unwrap_or(heads);
        if heads % kv_heads != 0 {
            return Err(format!(
                "num_attention_heads {heads} is not a multiple of num_key_value_heads {kv_heads}"
            ));
        }
        let head_dim = match get("head_dim")? {
            Some(d) => d,
            None if hidden % heads == 0 => hidden / heads,
            None => {
                return Err(format!(
                    "no \"head_dim\", and hidden_size {hidden} is not a multiple of \
                     num_attention_heads {heads}"
                ))
            }
        };
        let experts = ["num_local_experts", "num_experts", "n_routed_experts"]
            .iter()
            .map(|k| get(k))
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .flatten()
            .next();
        let intermediate = get("intermediate_size")?;
        let moe_intermediate = get("moe_intermediate_size")?;
        let moe = match experts {
            None => None,
            Some(experts) => {
                let intermediate = moe_intermediate.or(intermediate).ok_or_else(|| {
                    "a mixture of experts without \"moe_intermediate_size\" or \
                     \"intermediate_size\""
                        .to_string()
                })?;
                let shared = match (
                    get("shared_expert_intermediate_size")?,
                    get("n_shared_experts")?,
                ) {
                    (Some(s), _) => Some(s),
                    (None, Some(n)) => Some(n * intermediate),
                    (None, None) => None,
                };
                Some(Moe {
                    experts,
                    per_token: get("num_experts_per_tok")?,
                    intermediate,
                    shared_intermediate: shared,
                })
            }
        };
        let dense = match &moe {
            None => Some(intermediate.ok_or_else(|| need("intermediate_size").unwrap_err())?),
            Some(_) if moe_intermediate.is_some() => intermediate,
            Some(_) => None,
        };
        let name = v
            .get("model_type")
            .and_then(Value::as_str)
            .or_else(|| v.get("architectures")?.get(0)?.as_str())
            .unwrap_or("model")
            .chars()
            .take(64)
            .collect();
        Ok(ModelConfig {
            name,
            hidden,
            heads,
            kv_heads,
            head_dim,
            vocab: need("vocab_size")?,
            layers: need("num_hidden_layers")?,
            intermediate: dense,
            moe,
        })
    }

    /// "llama: hidden 2048, 32 heads (4 KV) of 64, MLP 5632, vocab 32000, 22 layers".
    pub fn summary(&self) -> String {
        let mlp = match (&self.moe, self.intermediate) {
            (Some(m), dense) => {
                let mut s = format!(
                    "{} experts{} of {}",
                    m.experts,
                    m.per_token
                        .map(|k| format!(" (top {k})"))
                        .unwrap_or_default(),
                    m.intermediate
                );
                if let Some(sh) = m.shared_intermediate {
                    s += &format!(", shared {sh}");
                }
                if let Some(d) = dense {
                    s += &format!(", dense MLP {d}");
                }
                s
            }
            (None, Some(d)) => format!("MLP {d}"),
            (None, None) => "no MLP".to_string(),
        };
        format!(
            "{}: hidden {}, {} heads ({} KV) of {}, {mlp}, vocab {}, {} layers",
            self.name,
            self.hidden,
            self.heads,
            self.kv_heads,
            self.head_dim,
            self.vocab,
            self.layers
        )
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Llama-style GQA: KV heads and head size from the config or their defaults.
    #[test]
    fn a_dense_config_gives_its_dimensions() {
        let c = ModelConfig::of(&json!({
            "model_type": "llama", "hidden_size": 2048, "intermediate_size": 5632,
            "num_attention_heads": 32, "num_key_value_heads": 4, "num_hidden_layers": 22,
            "vocab_size": 32000
        }))
        .unwrap();
        assert_eq!(
            (
                c.hidden,
                c.heads,
                c.kv_heads,
                c.head_dim,
                c.intermediate,
                c.moe.is_none()
            ),
            (2048, 32, 4, 64, Some(5632), true)
        );
        assert_eq!(
            c.summary(),
            "llama: hidden 2048, 32 heads (4 KV) of 64, MLP 5632, vocab 32000, 22 layers"
        );
    }

    /// Qwen-MoE: experts with a size of their own (moe_intermediate_size), so
    /// intermediate_size stays a dense role, and a shared expert; Mixtral: the experts'
    /// size is intermediate_size, and there is no dense MLP.
    #[test]
    fn a_moe_config_gives_its_experts() {
        let c = ModelConfig::of(&json!({"text_config": {
            "model_type": "qwen2_moe", "hidden_size": 2048, "intermediate_size": 5632,
            "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632,
            "num_experts": 60, "num_experts_per_tok": 4, "num_attention_heads": 16,
            "num_hidden_layers": 24, "vocab_size": 151936
        }}))
        .unwrap();
        let moe = c.moe.clone().unwrap();
        assert_eq!(
            (
                moe.experts,
                moe.per_token,
                moe.intermediate,
                moe.shared_intermediate
            ),
            (60, Some(4), 1408, Some(5632))
        );
        assert_eq!(c.intermediate, Some(5632));
        let m = ModelConfig::of(&json!({
            "hidden_size": 4096, "intermediate_size": 14336, "num_local_experts": 8,
            "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 32,
            "vocab_size": 32000
        }))
        .unwrap();
        assert_eq!((m.intermediate, m.moe.unwrap().intermediate), (None, 14336));
    }

    /// Bad configs name the key and what is wrong.
    #[test]
    fn bad_configs_say_what_is_wrong() {
        let err = |v: Value| ModelConfig::of(&v).unwrap_err();
        assert!(err(json!([1])).contains("not a JSON object"));
        assert!(err(json!({"hidden_size": 64})).starts_with("no \"num_attention_heads\""));
        assert_eq!(
            err(json!({"hidden_size": -1})),
            "\"hidden_size\" is -1, not a positive integer"
        );
        assert_eq!(
            err(json!({"hidden_size": 64, "num_attention_heads": 6, "num_key_value_heads": 4})),
            "num_attention_heads 6 is not a multiple of num_key_value_heads 4"
        );
    }
}
