//! The generated files' text: TypeScript types from the shapes' JSON Schemas (the subset
//! schemars derives for these types), and the schemas themselves as `as const` objects.

use std::fmt::Write as _;

use serde_json::Value;

use super::{definitions, input_schema_of, tool_schemas, Grants, TOOLS};

const HEADER: &str = "// Generated from crates/workcell-core/src/contract by `npm run generate`; do not edit.\n";

/// `native/contract.d.ts`: every tool's `XInput` / `XOutput` and the shapes they name.
pub fn types() -> String {
    let (defs, tools) = definitions();
    let mut out = String::from(HEADER);
    out.push_str("\n/** A tool error as the core serializes it. */\nexport interface CoreError {\n  code: string;\n  message: string;\n  hint?: string;\n  details?: unknown;\n}\n");
    out.push_str("\n/** What a call passed through from the core resolves to. */\nexport type Outcome<T> = { ok: T } | { error: CoreError };\n");
    for (tool, input, output) in &tools {
        for (suffix, schema) in [("Input", input), ("Output", output)] {
            let name = format!("{}{suffix}", tool.type_name);
            if reference(schema) != Some(name.as_str()) {
                let _ = write!(out, "\n/** The {suffix_l} of `{tool}`. */\nexport type {name} = {ty};\n", suffix_l = suffix.to_lowercase(), tool = tool.name, ty = ts(schema, 0));
            }
        }
    }
    for (name, schema) in &defs {
        out.push('\n');
        if schema.get("description").and_then(Value::as_str).is_some() {
            doc(&mut out, schema, 0);
        } else {
            // Every exported shape says what it is: a tool's input or output by its name.
            let owner = tools.iter().find_map(|(tool, _, _)| {
                [("Input", "input"), ("Output", "output")]
                    .into_iter()
                    .find(|(suffix, _)| *name == format!("{}{suffix}", tool.type_name))
                    .map(|(_, what)| format!("The {what} of `{}`.", tool.name))
            });
            let _ = writeln!(out, "/** {} */", owner.unwrap_or_else(|| format!("`{name}`, a shape of the tools' contract.")));
        }
        if schema.get("type").and_then(Value::as_str) == Some("object") && schema.get("properties").is_some() {
            let _ = writeln!(out, "export interface {name} {}", ts(schema, 0));
        } else {
            let _ = writeln!(out, "export type {name} = {};", ts(schema, 0));
        }
    }
    out.push_str("\n/** Every tool's input and output, by tool name. */\nexport interface ToolShapes {\n");
    for (tool, _, _) in &tools {
        let _ = writeln!(out, "  {}: {{ input: {t}Input; output: {t}Output }};", tool.name, t = tool.type_name);
    }
    out.push_str("}\n");
    out
}

/// `ts/generated/contract.ts`: the JSON Schemas of every tool's input and output, and of a
/// call's `grants`, and the types (re-exported).
pub fn schemas() -> String {
    let mut out = String::from(HEADER);
    out.push_str("export type * from \"../../native/contract.js\";\n");
    out.push_str("\n/** Every tool's input (`parameters`, without descriptions) and output JSON Schema, by tool name. */\nexport const TOOL_SCHEMAS = {\n");
    for tool in TOOLS {
        let (input, output) = tool_schemas(tool);
        let _ = writeln!(out, "  {}: {{\n    input: {},\n    output: {},\n  }},", tool.name, json(&input), json(&output));
    }
    out.push_str("} as const;\n");
    let _ = writeln!(out, "\n/** The JSON Schema of a process call's `grants`. */\nexport const GRANTS_SCHEMA = {} as const;", json(&input_schema_of::<Grants>()));
    out
}

fn json(v: &Value) -> String {
    serde_json::to_string(v).expect("a schema serializes")
}

fn reference(schema: &Value) -> Option<&str> {
    schema.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix("#/$defs/"))
}

fn doc(out: &mut String, schema: &Value, indent: usize) {
    if let Some(d) = schema.get("description").and_then(Value::as_str) {
        let pad = " ".repeat(indent);
        let text = d.replace("*/", "*\\/").replace('\n', &format!("\n{pad} * "));
        let _ = writeln!(out, "{pad}/** {text} */");
    }
}

/// The TypeScript type of `schema` (the subset schemars derives here).
fn ts(schema: &Value, indent: usize) -> String {
    let Some(map) = schema.as_object() else {
        return "unknown".into();
    };
    if let Some(name) = reference(schema) {
        return name.to_owned();
    }
    if let Some(c) = map.get("const") {
        return c.to_string();
    }
    if let Some(Value::Array(values)) = map.get("enum") {
        return values.iter().map(Value::to_string).collect::<Vec<_>>().join(" | ");
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(subs)) = map.get(key) {
            return subs.iter().map(|s| ts(s, indent)).collect::<Vec<_>>().join(" | ");
        }
    }
    match map.get("type") {
        Some(Value::Array(types)) => types
            .iter()
            .map(|t| {
                let mut one = map.clone();
                one.insert("type".into(), t.clone());
                ts(&Value::Object(one), indent)
            })
            .collect::<Vec<_>>()
            .join(" | "),
        Some(Value::String(t)) => match t.as_str() {
            "string" => "string".into(),
            "integer" | "number" => "number".into(),
            "boolean" => "boolean".into(),
            "null" => "null".into(),
            "array" => {
                let item = map.get("items").map_or_else(|| "unknown".into(), |i| ts(i, indent));
                if item.contains(' ') && !item.starts_with('{') {
                    format!("({item})[]")
                } else {
                    format!("{item}[]")
                }
            }
            "object" => object(map, indent),
            _ => "unknown".into(),
        },
        _ => "unknown".into(),
    }
}

fn object(map: &serde_json::Map<String, Value>, indent: usize) -> String {
    let props = map.get("properties").and_then(Value::as_object);
    if props.is_none_or(|p| p.is_empty()) {
        return match map.get("additionalProperties") {
            Some(Value::Bool(false)) => "Record<string, never>".into(),
            Some(v @ Value::Object(_)) => format!("Record<string, {}>", ts(v, indent)),
            _ => "Record<string, unknown>".into(),
        };
    }
    let required: Vec<&str> = map.get("required").and_then(Value::as_array).map_or_else(Vec::new, |r| r.iter().filter_map(Value::as_str).collect());
    let pad = " ".repeat(indent + 2);
    let mut out = String::from("{\n");
    for (name, sub) in props.into_iter().flatten() {
        doc(&mut out, sub, indent + 2);
        let opt = if required.contains(&name.as_str()) { "" } else { "?" };
        let _ = writeln!(out, "{pad}{name}{opt}: {};", ts(sub, indent + 2));
    }
    out.push_str(&" ".repeat(indent));
    out.push('}');
    out
}
