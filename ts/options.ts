// The declared options of every factory: one spec per factory (key -> kind), from which the
// creation-time checks and the strict-options tests (test/options-strict.test.ts) are made.
// A host's misconfiguration is a TypeError at creation that names the option's full path:
// an unknown key (with the nearest valid one), a value of the wrong type or out of range.
// Adding an option is one entry in its factory's spec (see docs/adding-a-tool.md).

/** What an option accepts. */
export type OptionKind =
  | { readonly type: "boolean" }
  | { readonly type: "integer"; readonly min: number; readonly max: number }
  | { readonly type: "enum"; readonly values: readonly string[] }
  /** A string; `nonEmpty` refuses "", NUL characters are always refused. */
  | { readonly type: "string"; readonly nonEmpty?: boolean }
  | { readonly type: "strings" }
  /** An array of integers, each from `min` to `max`. */
  | { readonly type: "integers"; readonly min: number; readonly max: number }
  /** An absolute path. */
  | { readonly type: "path" }
  /** An array of absolute paths. */
  | { readonly type: "paths" }
  | { readonly type: "function" }
  /** An array (its elements are checked by the factory). */
  | { readonly type: "array" }
  /** A plain object with its own declared keys. */
  | { readonly type: "object"; readonly spec: OptionSpec }
  /** A plain object of any keys, each value of one kind. */
  | { readonly type: "record"; readonly values: OptionKind }
  /** Any of several kinds. */
  | { readonly type: "oneOf"; readonly kinds: readonly OptionKind[] }
  | { readonly type: "null" };

/** One option: its kind and a line for the documentation. */
export interface OptionRule {
  readonly kind: OptionKind;
  readonly doc: string;
}

/** A factory's options, by key. */
export type OptionSpec = Readonly<Record<string, OptionRule>>;

/** A spec with exactly the keys of the options type `T` (checked by the compiler). */
export type OptionSpecOf<T> = { readonly [K in keyof Required<T>]: OptionRule };

/** Builders for the spec entries: `{ timeoutMs: option.integer(1, MAX, "the timeout") }`. */
export const option = {
  boolean: (doc: string): OptionRule => ({ kind: { type: "boolean" }, doc }),
  integer: (min: number, max: number, doc: string): OptionRule => ({ kind: { type: "integer", min, max }, doc }),
  enum: (values: readonly string[], doc: string): OptionRule => ({ kind: { type: "enum", values }, doc }),
  string: (doc: string, nonEmpty = false): OptionRule => ({ kind: { type: "string", nonEmpty }, doc }),
  strings: (doc: string): OptionRule => ({ kind: { type: "strings" }, doc }),
  integers: (min: number, max: number, doc: string): OptionRule => ({ kind: { type: "integers", min, max }, doc }),
  path: (doc: string): OptionRule => ({ kind: { type: "path" }, doc }),
  paths: (doc: string): OptionRule => ({ kind: { type: "paths" }, doc }),
  function: (doc: string): OptionRule => ({ kind: { type: "function" }, doc }),
  array: (doc: string): OptionRule => ({ kind: { type: "array" }, doc }),
  object: (spec: OptionSpec, doc: string): OptionRule => ({ kind: { type: "object", spec }, doc }),
  record: (values: OptionKind, doc: string): OptionRule => ({ kind: { type: "record", values }, doc }),
  oneOf: (kinds: readonly OptionKind[], doc: string): OptionRule => ({ kind: { type: "oneOf", kinds }, doc }),
} as const;

/** Levenshtein distance, for the nearest valid key. */
function distance(a: string, b: string): number {
  const d = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = d[0]!;
    d[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = d[j]!;
      d[j] = Math.min(d[j]! + 1, d[j - 1]! + 1, prev + (a[i - 1]!.toLowerCase() === b[j - 1]!.toLowerCase() ? 0 : 1));
      prev = cur;
    }
  }
  return d[b.length]!;
}

/** The valid key nearest to `key` (at most a third of its letters off, or a case/prefix match). */
export function nearestKey(key: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const k of known) {
    const d = distance(k, key);
    if (d < bestDistance) {
      best = k;
      bestDistance = d;
    }
  }
  if (best === undefined) return undefined;
  const lower = key.toLowerCase();
  const prefix = known.find((k) => k.toLowerCase().startsWith(lower) || lower.startsWith(k.toLowerCase()));
  if (bestDistance <= Math.max(2, Math.floor(Math.max(key.length, best.length) / 3))) return best;
  return prefix;
}

/** What a kind accepts, in words: `an integer from 1 to 4294967295`. */
export function describeKind(kind: OptionKind): string {
  switch (kind.type) {
    case "boolean":
      return "true or false";
    case "integer":
      return `an integer from ${kind.min} to ${kind.max}`;
    case "enum":
      return `one of ${kind.values.map((v) => JSON.stringify(v)).join(", ")}`;
    case "string":
      return kind.nonEmpty ? "a non-empty string without NUL characters" : "a string without NUL characters";
    case "integers":
      return `an array of integers from ${kind.min} to ${kind.max}`;
    case "strings":
      return "an array of strings";
    case "path":
      return "an absolute path";
    case "paths":
      return "an array of absolute paths";
    case "array":
      return "an array";
    case "function":
      return "a function";
    case "object":
      return `an object with the keys ${Object.keys(kind.spec).join(", ") || "(none)"}`;
    case "record":
      return `an object whose values are ${describeKind(kind.values)}`;
    case "oneOf":
      return kind.kinds.map(describeKind).join(" or ");
    case "null":
      return "null";
  }
}

function got(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  switch (typeof value) {
    case "string":
      return value.length > 40 ? `a string of ${value.length} characters` : JSON.stringify(value);
    case "number":
    case "boolean":
    case "bigint":
      return String(value);
    case "object":
      return isPlainObject(value) ? "an object" : `an instance of ${(value as object).constructor?.name ?? "a class"}`;
    default:
      return `a ${typeof value}`;
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

function isAbsolutePath(value: unknown): boolean {
  return typeof value === "string" && value.startsWith("/") && !value.includes("\0");
}

/** Whether `value` is of `kind` (nested objects are checked key by key by `check`). */
function accepts(kind: OptionKind, value: unknown): boolean {
  switch (kind.type) {
    case "boolean":
      return typeof value === "boolean";
    case "integer":
      return typeof value === "number" && Number.isSafeInteger(value) && value >= kind.min && value <= kind.max;
    case "enum":
      return typeof value === "string" && kind.values.includes(value);
    case "string":
      return typeof value === "string" && !value.includes("\0") && !(kind.nonEmpty && value.length === 0);
    case "integers":
      return Array.isArray(value) && value.every((v) => typeof v === "number" && Number.isSafeInteger(v) && v >= kind.min && v <= kind.max);
    case "strings":
      return Array.isArray(value) && value.every((v) => typeof v === "string");
    case "path":
      return isAbsolutePath(value);
    case "paths":
      return Array.isArray(value) && value.every(isAbsolutePath);
    case "array":
      return Array.isArray(value);
    case "function":
      return typeof value === "function";
    case "object":
    case "record":
      return isPlainObject(value);
    case "oneOf":
      return kind.kinds.some((k) => accepts(k, value) && (k.type !== "object" && k.type !== "record" ? true : deepOk(k, value)));
    case "null":
      return value === null;
  }
}

function deepOk(kind: OptionKind, value: unknown): boolean {
  try {
    checkValue("", kind, value, "x");
    return true;
  } catch {
    return false;
  }
}

/** The one element kind an array kind holds, with what it accepts in words. */
function elementOf(kind: OptionKind): { ok: (v: unknown) => boolean; what: string } | undefined {
  switch (kind.type) {
    case "strings":
      return { ok: (v) => typeof v === "string", what: "a string" };
    case "paths":
      return { ok: isAbsolutePath, what: "an absolute path" };
    case "integers":
      return { ok: (v) => accepts({ type: "integer", min: kind.min, max: kind.max }, v), what: `an integer from ${kind.min} to ${kind.max}` };
    default:
      return undefined;
  }
}

/** A value's shape, to pick the alternative of a `oneOf` that a value was meant as. */
function shapeOf(value: unknown): "array" | "object" | "other" {
  return Array.isArray(value) ? "array" : isPlainObject(value) ? "object" : "other";
}

function kindShape(kind: OptionKind): "array" | "object" | "other" {
  if (kind.type === "object" || kind.type === "record") return "object";
  return elementOf(kind) !== undefined || kind.type === "array" ? "array" : "other";
}

function checkValue(where: string, kind: OptionKind, value: unknown, path: string): void {
  // A value of the shape of exactly one alternative was meant as that one: its own check names
  // the entry or key at fault (`network.alow`, `env.LANG`) rather than the whole union.
  if (kind.type === "oneOf" && !accepts(kind, value)) {
    const meant = kind.kinds.filter((k) => kindShape(k) !== "other" && kindShape(k) === shapeOf(value));
    if (meant.length === 1) return checkValue(where, meant[0]!, value, path);
  }
  if (!accepts(kind, value)) {
    // An array of the right kind but for one element: name that element.
    const element = Array.isArray(value) ? elementOf(kind) : undefined;
    const bad = element === undefined ? -1 : (value as unknown[]).findIndex((v) => !element.ok(v));
    if (element !== undefined && bad >= 0) {
      throw new TypeError(`workcell: ${where}${path}[${bad}] must be ${element.what} (got ${got((value as unknown[])[bad])})`);
    }
    throw new TypeError(`workcell: ${where}${path} must be ${describeKind(kind)} (got ${got(value)})`);
  }
  if (kind.type === "object") checkSpec(where, kind.spec, value as Record<string, unknown>, path);
  if (kind.type === "record") {
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) checkValue(where, kind.values, v, `${path}.${k}`);
  }
}

/**
 * `guard.protect` for `protect` given at the top: of the nested specs that have the key, the
 * smallest (the shared defaults, such as `guard` or `processes`, before one tool's options).
 */
function nestedKey(spec: OptionSpec, key: string): string | undefined {
  let best: [string, number] | undefined;
  for (const [name, rule] of Object.entries(spec)) {
    if (rule.kind.type !== "object" || !Object.prototype.hasOwnProperty.call(rule.kind.spec, key)) continue;
    const size = Object.keys(rule.kind.spec).length;
    if (best === undefined || size < best[1]) best = [name, size];
  }
  return best === undefined ? undefined : `${best[0]}.${key}`;
}

function checkSpec(where: string, spec: OptionSpec, options: Record<string, unknown>, prefix: string): void {
  const known = Object.keys(spec);
  const dot = prefix === "" ? "" : `${prefix}.`;
  for (const key of Object.keys(options)) {
    if (!Object.prototype.hasOwnProperty.call(spec, key)) {
      const near = nearestKey(key, known) ?? nestedKey(spec, key);
      const tail = near !== undefined ? `did you mean ${dot}${near}?` : `the options are ${known.map((k) => dot + k).join(", ") || "(none)"}`;
      throw new TypeError(`workcell: ${where}${dot}${key}: unknown option; ${tail}`);
    }
    const value = options[key];
    if (value === undefined) continue;
    checkValue(where, spec[key]!.kind, value, `${dot}${key}`);
  }
}

/**
 * Checks a factory's `options` against its spec: throws a TypeError naming the option's full
 * path for an unknown key (with the nearest valid key) and for a value of the wrong type or
 * range. `undefined` values count as absent. `factory` names the caller in the message.
 */
export function checkOptions(factory: string, spec: OptionSpec, options: unknown, prefix = ""): void {
  if (options === undefined) return;
  const where = `${factoryName(factory)}: `;
  if (!isPlainObject(options)) {
    throw new TypeError(`workcell: ${where}${prefix || "options"} must be a plain object (got ${got(options)})`);
  }
  checkSpec(where, spec, options, prefix);
}

/** The factory the host called, while it builds tools through other factories. */
let outerFactory: string | undefined;

/**
 * Runs `build` on behalf of `factory` (`createCodingTools` building its tools through the
 * other factories): every creation-time error raised meanwhile names `factory`, the function
 * the host called, rather than the inner factory it never saw.
 */
export function asPartOf<T>(factory: string, build: () => T): T {
  const previous = outerFactory;
  outerFactory ??= factory;
  try {
    return build();
  } finally {
    outerFactory = previous;
  }
}

/** The factory a creation-time error names: `own`, or the outer one (see {@link asPartOf}). */
export function factoryName(own: string): string {
  return outerFactory ?? own;
}

/**
 * Every factory's spec, by factory name: what test/options-strict.test.ts walks (a key in a
 * spec is tested without a test naming it). Filled in by each factory's module.
 */
export const OPTION_SPECS: Record<string, OptionSpec> = {};

/** Declares `factory`'s spec (once, at module load) and returns it. */
export function declareOptions<S extends OptionSpec>(factory: string, spec: S): S {
  OPTION_SPECS[factory] = spec;
  return spec;
}
