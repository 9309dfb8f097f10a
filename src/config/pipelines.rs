//! pipelines/*.yaml → named `PipelineSpec`s (each stage with its parameters and where they were
//! written). Whether the stages exist and fit together is the chain builder's question.

use super::{parse_yaml, raw, ConfigError, Origin, PipelineSpec, Reporter, StageRef};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The pipelines that were read, and the names of the files that could not be (their stems),
/// so a route naming one of those gets no second error for the same mistake.
pub struct Pipelines {
    pub specs: BTreeMap<String, PipelineSpec>,
    pub unreadable: Vec<String>,
}

pub fn load(dir: &Path, errors: &mut Vec<ConfigError>) -> Pipelines {
    let mut out = BTreeMap::new();
    let mut unreadable = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            errors.push(ConfigError {
                file: dir.to_path_buf(),
                line: 1,
                column: 1,
                message: format!("cannot read the pipelines folder {}: {e}", dir.display()),
                hint: "pipelines/ is looked for beside routes.yaml (the folder of --config)".into(),
            });
            return Pipelines {
                specs: out,
                unreadable,
            };
        }
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml")))
        .collect();
    paths.sort();
    for path in paths {
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => {
                errors.push(ConfigError {
                    file: path.clone(),
                    line: 1,
                    column: 1,
                    message: format!("cannot read: {e}"),
                    hint: String::new(),
                });
                unreadable.push(stem(&path));
                continue;
            }
        };
        let file: raw::PipelineFile = match parse_yaml(&path, &text) {
            Ok(f) => f,
            Err(e) => {
                errors.push(e);
                unreadable.push(stem(&path));
                continue;
            }
        };
        let name = file.name.value.clone();
        if let Some(prev) = out.get(&name) {
            let prev: &PipelineSpec = prev;
            Reporter::new(&path, errors).at(
                file.name.referenced,
                format!(
                    "pipeline `{name}` is already defined in {}",
                    prev.origin.file.display()
                ),
                "give each pipeline a unique name",
            );
            continue;
        }
        let stages = file
            .stages
            .into_iter()
            .map(|s| {
                let (params, ploc) = match s.params {
                    Some(p) => (p.value, p.referenced),
                    None => (Value::Object(Default::default()), s.stage.referenced),
                };
                StageRef {
                    name: s.stage.value,
                    params,
                    origin: Origin {
                        file: path.clone(),
                        loc: s.stage.referenced,
                    },
                    params_origin: Origin {
                        file: path.clone(),
                        loc: ploc,
                    },
                }
            })
            .collect();
        out.insert(
            name.clone(),
            PipelineSpec {
                name,
                description: file.description,
                stages,
                origin: Origin {
                    file: path.clone(),
                    loc: file.name.referenced,
                },
            },
        );
    }
    Pipelines {
        specs: out,
        unreadable,
    }
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}
