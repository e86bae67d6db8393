//! The tools' public contract, defined once: each tool's input and output shape as serde types
//! with their JSON Schemas derived here (schemars). The outputs are the core's own result types
//! (plus what the JS layer adds to a process result: `denials`, and node_process's `note`); the
//! inputs are what a model sends. [`generate`] writes from them the committed files the
//! TypeScript layer and the binding use (`native/contract.d.ts`: the types;
//! `ts/generated/contract.ts`: the JSON Schemas), so no shape is written twice by hand.
//! `cargo run -p workcell-core --bin contract` (npm run generate) rewrites them; a test fails
//! when the committed files differ.

mod checkpoints;
mod stage;
mod tools;
mod typescript;

pub use checkpoints::*;
pub use stage::*;
pub use tools::*;

use schemars::{JsonSchema, Schema};
use serde_json::{Map, Value};

use crate::approval::Denial;

/// A process tool's result as the tool returns it: the core's result and the sandbox denials
/// its output showed (read by the JS layer from the core's `sandboxDenials`).
#[derive(JsonSchema)]
#[schemars(inline)]
pub struct WithDenials<T> {
    #[serde(flatten)]
    pub result: T,
    /// What the sandbox refused, as the output shows it (with a `note` on the next step).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub denials: Option<Vec<Denial>>,
}

/// node_process's result: the run (with its `note`), and the denials.
#[derive(JsonSchema)]
#[schemars(rename = "NodeProcessOutput")]
pub struct NodeProcessOutput(pub WithDenials<crate::node::NodeOutput>);

#[derive(JsonSchema)]
#[schemars(rename = "RunCommandOutput")]
pub struct RunCommandOutput(pub WithDenials<crate::command::CommandOutput>);

#[derive(JsonSchema)]
#[schemars(rename = "RunTestsOutput")]
pub struct RunTestsOutput(pub WithDenials<crate::testrun::TestsOutput>);

/// start_process, read_process and stop_process.
#[derive(JsonSchema)]
#[schemars(rename = "ProcessOutput")]
pub struct ProcessOutput(pub WithDenials<crate::session::table::ProcessOutput>);

/// read_file's result: a whole text file, a window of lines, or an image.
#[derive(JsonSchema)]
#[serde(untagged)]
#[schemars(rename = "ReadFileOutput")]
pub enum ReadFileOutput {
    Text(crate::read::ReadOutput),
    Window(crate::page::WindowOutput),
    Image(crate::read::ImageOutput),
}

/// One tool's shapes.
pub struct ToolShapes {
    pub name: &'static str,
    /// `ReadFile` for `read_file`: the types are `ReadFileInput` and `ReadFileOutput`.
    pub type_name: &'static str,
    input: fn(&mut schemars::SchemaGenerator) -> Schema,
    output: fn(&mut schemars::SchemaGenerator) -> Schema,
}

/// A schema as sent to a model or client: no `$schema`, titles, doc comments or formats (the
/// descriptions are written by hand in the JS layer), every object closed
/// (`additionalProperties: false` unless it is a map), and an optional property never `null`
/// (an absent value is left out, never sent as `null`).
pub fn compact(value: &mut Value) {
    compact_with(value, false)
}

/// [`compact`], keeping the doc comments as `description`s when `docs` (for the TypeScript
/// types' doc comments).
fn compact_with(value: &mut Value, docs: bool) {
    let Value::Object(map) = value else { return };
    for key in ["$schema", "title", "format"] {
        map.remove(key);
    }
    if !docs {
        map.remove("description");
    }
    let required: Vec<String> = match map.get("required") {
        Some(Value::Array(r)) => r.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect(),
        _ => Vec::new(),
    };
    if let Some(Value::Object(props)) = map.get_mut("properties") {
        for (name, prop) in props.iter_mut() {
            if !required.iter().any(|r| r == name) {
                drop_null(prop);
            }
            compact_with(prop, docs);
        }
    }
    if map.get("type").and_then(Value::as_str) == Some("object") && !map.contains_key("additionalProperties") {
        map.insert("additionalProperties".into(), Value::Bool(false));
    }
    for key in ["items", "additionalProperties"] {
        if let Some(sub) = map.get_mut(key) {
            compact_with(sub, docs);
        }
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(subs)) = map.get_mut(key) {
            subs.iter_mut().for_each(|s| compact_with(s, docs));
        }
    }
    // An enum whose variants have doc comments comes as `oneOf: [{ type, const }, ...]`: once
    // the comments are gone, `{ type, enum: [...] }` says the same.
    if !docs {
        if let Some(Value::Array(subs)) = map.get("oneOf") {
            let ty = subs.first().and_then(|s| s.get("type")).cloned();
            let plain = |s: &Value| s.as_object().is_some_and(|o| o.len() == 2 && o.get("type") == ty.as_ref() && o.contains_key("const"));
            if ty.is_some() && subs.iter().all(plain) {
                let values: Vec<Value> = subs.iter().map(|s| s["const"].clone()).collect();
                map.remove("oneOf");
                map.insert("type".into(), ty.expect("checked"));
                map.insert("enum".into(), Value::Array(values));
            }
        }
    }
}

/// `T | null` to `T`: `type: [T, "null"]`, or `anyOf: [T, { type: "null" }]`.
fn drop_null(value: &mut Value) {
    let Value::Object(map) = value else { return };
    if let Some(Value::Array(types)) = map.get("type") {
        let kept: Vec<Value> = types.iter().filter(|t| t.as_str() != Some("null")).cloned().collect();
        let ty = if kept.len() == 1 { kept[0].clone() } else { Value::Array(kept) };
        map.insert("type".into(), ty);
    }
    if let Some(Value::Array(subs)) = map.get("anyOf") {
        let kept: Vec<Value> = subs.iter().filter(|s| s.get("type").and_then(Value::as_str) != Some("null")).cloned().collect();
        if kept.len() == 1 {
            let only = kept.into_iter().next().expect("one");
            map.remove("anyOf");
            if let Value::Object(o) = only {
                map.extend(o);
            }
        } else {
            map.insert("anyOf".into(), Value::Array(kept));
        }
    }
    if let Some(Value::Array(values)) = map.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
}

/// The generator of inputs (what serde reads: an `Option` may be left out) or outputs (what serde
/// writes: an `Option` is `null` unless skipped), `inline` for self-contained schemas.
fn generator(output: bool, inline: bool) -> schemars::SchemaGenerator {
    let settings = schemars::generate::SchemaSettings::draft2020_12().with(|s| s.inline_subschemas = inline);
    if output { settings.for_serialize() } else { settings.for_deserialize() }.into_generator()
}

/// One tool's input and output JSON Schemas, self-contained (no `$ref`) and compacted.
pub fn tool_schemas(tool: &ToolShapes) -> (Value, Value) {
    let mut input = (tool.input)(&mut generator(false, true)).to_value();
    let mut output = (tool.output)(&mut generator(true, true)).to_value();
    compact(&mut input);
    compact(&mut output);
    // Parameters always list `properties` (some providers require it), even with none.
    if let Value::Object(map) = &mut input {
        map.entry("properties").or_insert_with(|| Value::Object(Map::new()));
    }
    drop_count_minimum(&mut output);
    drop_enum_type(&mut output);
    share_repeats(&mut output);
    // A union of objects (read_file's) is still an object at the top, as MCP's outputSchema must be.
    if let Value::Object(map) = &mut output {
        if map.contains_key("anyOf") && !map.contains_key("type") {
            map.insert("type".into(), "object".into());
        }
    }
    (input, output)
}

/// A result's counts are `integer`: the `minimum: 0` of an unsigned type says nothing a reader
/// of a result needs (results are the core's own), and costs bytes in every listing.
fn drop_count_minimum(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map.get("minimum") == Some(&Value::from(0)) {
                map.remove("minimum");
            }
            map.values_mut().for_each(drop_count_minimum);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_count_minimum),
        _ => {}
    }
}

/// An output's enum of strings without its `"type": "string"`: the values say the type
/// exactly (JSON Schema's `enum` admits only the values listed), so the listing is shorter and
/// says the same. Inputs keep it (some providers require a `type` on every property).
fn drop_enum_type(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let strings = matches!(map.get("enum"), Some(Value::Array(vs)) if vs.iter().all(Value::is_string));
            if strings && map.get("type").and_then(Value::as_str) == Some("string") {
                map.remove("type");
            }
            map.values_mut().for_each(drop_enum_type);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_enum_type),
        _ => {}
    }
}

/// A subschema that stands more than once in `schema` (the sandbox report's three limits) is
/// said once, in `$defs`, and referred to: the schema stays self-contained and exact, shorter.
fn share_repeats(schema: &mut Value) {
    fn count(v: &Value, seen: &mut std::collections::HashMap<String, usize>) {
        match v {
            Value::Object(map) => {
                let text = v.to_string();
                if text.len() > 64 && map.contains_key("type") {
                    *seen.entry(text).or_default() += 1;
                }
                map.values().for_each(|v| count(v, seen));
            }
            Value::Array(items) => items.iter().for_each(|v| count(v, seen)),
            _ => {}
        }
    }
    fn replace(v: &mut Value, names: &[(String, String)], used: &mut std::collections::BTreeSet<usize>) {
        let text = v.to_string();
        if let Some(i) = names.iter().position(|(t, _)| *t == text) {
            *v = serde_json::json!({ "$ref": format!("#/$defs/{}", names[i].1) });
            used.insert(i);
            return;
        }
        match v {
            Value::Object(map) => map.values_mut().for_each(|v| replace(v, names, used)),
            Value::Array(items) => items.iter_mut().for_each(|v| replace(v, names, used)),
            _ => {}
        }
    }
    let mut seen = std::collections::HashMap::new();
    count(schema, &mut seen);
    let mut repeated: Vec<String> = seen.into_iter().filter(|(_, n)| *n > 1).map(|(t, _)| t).collect();
    // The largest first, in a stable order; a repeat inside another repeat is shared with it.
    repeated.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
    let names: Vec<(String, String)> = repeated.into_iter().enumerate().map(|(i, t)| (t, format!("s{i}"))).collect();
    // A def named by its place among the repeats: `s0` is the largest.
    if names.is_empty() {
        return;
    }
    let mut used = std::collections::BTreeSet::new();
    replace(schema, &names, &mut used);
    // Only what the schema refers to (a repeat inside a shared one stays inside it).
    let defs: Map<String, Value> = used.iter().map(|&i| (names[i].1.clone(), serde_json::from_str(&names[i].0).expect("a schema"))).collect();
    if let Value::Object(map) = schema {
        map.insert("$defs".into(), Value::Object(defs));
    }
}

/// The JSON Schema of an input `T`, self-contained and compacted (for shapes that are no tool's).
pub fn input_schema_of<T: JsonSchema>() -> Value {
    let mut v = generator(false, true).subschema_for::<T>().to_value();
    compact(&mut v);
    v
}

/// The files [`generate`] writes: (path from the repository root, content).
pub fn generate() -> Vec<(&'static str, String)> {
    vec![("native/contract.d.ts", typescript::types()), ("ts/generated/contract.ts", typescript::schemas())]
}

/// Every named shape and the tools' own: definitions by name, and per tool the schema of its
/// input and output (a `$ref` or inline), for the TypeScript types.
fn definitions() -> (Map<String, Value>, Vec<(&'static ToolShapes, Value, Value)>) {
    let (mut inputs, mut outputs) = (generator(false, false), generator(true, false));
    let mut tools = Vec::new();
    for t in TOOLS {
        let mut i = (t.input)(&mut inputs).to_value();
        let mut o = (t.output)(&mut outputs).to_value();
        compact_with(&mut i, true);
        compact_with(&mut o, true);
        tools.push((t, i, o));
    }
    inputs.subschema_for::<Grants>();
    outputs.subschema_for::<crate::read::ReadResult>();
    outputs.subschema_for::<crate::approval::Preview>();
    let mut defs = inputs.take_definitions(true);
    defs.extend(outputs.take_definitions(true));
    defs.values_mut().for_each(|d| compact_with(d, true));
    (defs, tools)
}
