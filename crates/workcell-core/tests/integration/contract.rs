//! The files generated from the tools' contract are the committed ones, and the shapes say
//! what the core's results are.

use std::path::Path;

use workcell_core::contract;

#[test]
fn the_committed_contract_files_are_what_the_generator_writes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for (path, text) in contract::generate() {
        let committed = std::fs::read_to_string(root.join(path)).unwrap_or_default();
        assert!(
            committed == text,
            "{path} differs from what crates/workcell-core/src/contract generates: run `npm run generate` and commit it"
        );
    }
}

#[test]
fn every_tool_has_a_closed_object_input_and_a_self_contained_output() {
    for tool in contract::TOOLS {
        let (input, output) = contract::tool_schemas(tool);
        assert_eq!(input["type"], "object", "{}", tool.name);
        assert_eq!(input["additionalProperties"], false, "{}", tool.name);
        assert!(input["properties"].is_object(), "{}: parameters list their properties", tool.name);
        let text = serde_json::to_string(&output).unwrap();
        assert!(!text.contains("\"description\""), "{}: {text}", tool.name);
        // Every `$ref` is to the schema's own `$defs`.
        for part in text.split("\"$ref\":\"").skip(1) {
            let name = part.split('"').next().unwrap().strip_prefix("#/$defs/").expect("a local ref");
            assert!(output["$defs"][name].is_object(), "{}: {name}", tool.name);
        }
    }
}

#[test]
fn the_sandbox_report_schema_has_its_limits() {
    let (_, output) = contract::tool_schemas(contract::TOOLS.iter().find(|t| t.name == "run_command").unwrap());
    let sandbox = &output["properties"]["sandbox"];
    let sandbox = match sandbox["$ref"].as_str() {
        Some(r) => &output["$defs"][r.trim_start_matches("#/$defs/")],
        None => sandbox,
    };
    assert_eq!(sandbox["additionalProperties"], false);
    let required: Vec<&str> = sandbox["required"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    for field in ["landlockAbi", "filesystem", "network", "processes", "nodePermission", "limits", "protect"] {
        assert!(required.contains(&field), "sandbox.{field} is not required: {sandbox}");
    }
}

#[test]
fn an_output_enum_of_strings_says_its_values_only_and_an_input_enum_keeps_its_type() {
    // `{ "enum": ["a", "b"] }` says exactly what `{ "type": "string", "enum": ["a", "b"] }` says,
    // in fewer bytes of every tools/list; inputs keep the type (providers require one).
    fn enums(v: &serde_json::Value, out: &mut Vec<serde_json::Value>) {
        match v {
            serde_json::Value::Object(map) => {
                if map.contains_key("enum") {
                    out.push(v.clone());
                }
                map.values().for_each(|v| enums(v, out));
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| enums(v, out)),
            _ => {}
        }
    }
    let (mut inputs, mut outputs) = (Vec::new(), Vec::new());
    for tool in contract::TOOLS {
        let (input, output) = contract::tool_schemas(tool);
        enums(&input, &mut inputs);
        enums(&output, &mut outputs);
    }
    let run = contract::tool_schemas(contract::TOOLS.iter().find(|t| t.name == "run_command").unwrap()).1;
    assert_eq!(run["properties"]["sandbox"]["properties"]["network"], serde_json::json!({ "enum": ["blocked", "allowed", "filtered", "open"] }));
    assert!(!outputs.is_empty() && !inputs.is_empty());
    for e in &outputs {
        let strings = e["enum"].as_array().unwrap().iter().all(|v| v.is_string());
        assert!(!(strings && e.get("type").is_some()), "an output enum of strings with a type: {e}");
    }
    for e in &inputs {
        assert!(e.get("type").is_some(), "an input enum without a type: {e}");
    }
}
