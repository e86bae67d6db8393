import { ArgumentsReason, invalidArguments } from "./errors.js";

export type JsonSchemaType = "object" | "string" | "array" | "integer" | "number" | "boolean" | "null";

/** The subset of JSON Schema that workcell's tools use (generated from the core's types: ts/generated/contract.ts). */
export interface JsonSchema {
  /** One type, or several (an output's nullable field: `["integer", "null"]`). */
  type?: JsonSchemaType | readonly JsonSchemaType[];
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: readonly string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  minItems?: number;
  maxItems?: number;
  minLength?: number;
  minimum?: number;
  maximum?: number;
  enum?: readonly (string | number | boolean)[];
  default?: unknown;
  [keyword: string]: unknown;
}

function shape(where: string, what: string): never {
  throw invalidArguments(ArgumentsReason.INVALID_ARGUMENTS_SHAPE, `${where} ${what}`, { at: where });
}

/**
 * Checks `value` against `schema` (the subset above) and that every string in it is
 * well-formed Unicode. Throws `TOOL_ARGUMENTS_INVALID` with `INVALID_ARGUMENTS_SHAPE` or
 * `INVALID_UNICODE`; has no effects.
 */
export function checkSchema(schema: JsonSchema, value: unknown, where = "arguments"): void {
  switch (schema.type) {
    case "object": {
      if (typeof value !== "object" || value === null || Array.isArray(value)) {
        shape(where, "must be a JSON object");
      }
      const record = value as Record<string, unknown>;
      const props = schema.properties ?? {};
      for (const key of schema.required ?? []) {
        if (!Object.prototype.hasOwnProperty.call(record, key) || record[key] === undefined) {
          shape(`${where}.${key}`, "is required");
        }
      }
      for (const key of Object.keys(record)) {
        const sub = Object.prototype.hasOwnProperty.call(props, key) ? props[key] : undefined;
        if (sub === undefined) {
          if (schema.additionalProperties === false) {
            shape(`${where}.${key}`, `is not a known property (allowed: ${Object.keys(props).join(", ")})`);
          }
          continue;
        }
        if (record[key] === undefined) continue;
        checkSchema(sub, record[key], `${where}.${key}`);
      }
      return;
    }
    case "array": {
      if (!Array.isArray(value)) shape(where, "must be an array");
      const arr = value as unknown[];
      if (schema.minItems !== undefined && arr.length < schema.minItems) {
        shape(where, `must have at least ${schema.minItems} item(s)`);
      }
      if (schema.maxItems !== undefined && arr.length > schema.maxItems) {
        shape(where, `must have at most ${schema.maxItems} item(s)`);
      }
      if (schema.items) arr.forEach((item, i) => checkSchema(schema.items!, item, `${where}[${i}]`));
      return;
    }
    case "string": {
      if (typeof value !== "string") shape(where, "must be a string");
      const s = value as string;
      if (!s.isWellFormed()) {
        throw invalidArguments(
          ArgumentsReason.INVALID_UNICODE,
          `${where} contains a lone UTF-16 surrogate; send well-formed Unicode text`,
          { at: where },
        );
      }
      if (schema.minLength !== undefined && s.length < schema.minLength) {
        shape(where, `must have at least ${schema.minLength} character(s)`);
      }
      break;
    }
    case "integer":
      if (typeof value !== "number" || !Number.isSafeInteger(value)) shape(where, "must be an integer");
      break;
    case "number":
      if (typeof value !== "number" || !Number.isFinite(value)) shape(where, "must be a finite number");
      break;
    case "boolean":
      if (typeof value !== "boolean") shape(where, "must be true or false");
      return;
    default:
      return;
  }
  if (typeof value === "number") {
    if (schema.minimum !== undefined && value < schema.minimum) shape(where, `must be at least ${schema.minimum}`);
    if (schema.maximum !== undefined && value > schema.maximum) shape(where, `must be at most ${schema.maximum}`);
  }
  if (schema.enum && !schema.enum.includes(value as string | number | boolean)) {
    shape(where, `must be one of ${schema.enum.map((v) => JSON.stringify(v)).join(", ")}`);
  }
}

/**
 * A copy of `schema` whose property descriptions are replaced by `descriptions` (keys are
 * property names; `edits.oldText` names a property of an array's item objects). The structure
 * (and so what `checkSchema` accepts) is unchanged: compact and full definitions validate alike.
 */
export function withDescriptions(schema: JsonSchema, descriptions: Readonly<Record<string, string>>, prefix = ""): JsonSchema {
  const out: JsonSchema = { ...schema };
  if (schema.properties) {
    const props: Record<string, JsonSchema> = {};
    for (const [name, sub] of Object.entries(schema.properties)) {
      let copy: JsonSchema = { ...sub };
      const text = descriptions[prefix + name];
      if (text !== undefined) copy.description = text;
      if (sub.items?.properties) copy = { ...copy, items: withDescriptions(sub.items, descriptions, `${prefix}${name}.`) };
      else if (sub.properties) copy = withDescriptions(copy, descriptions, `${prefix}${name}.`);
      props[name] = copy;
    }
    out.properties = props;
  }
  return out;
}
