// Strict options, generated from the declared option specs (ts/options.ts): for every factory
// and every key at every depth, a misspelt key and a value of the wrong type (or range) each
// throw a TypeError naming the option's full path, and a value of the right kind is accepted.
// A key added to a spec is covered here without a test naming it.
import { describe, expect, it } from "vitest";
import * as workcell from "../dist/index.js";
import { OPTION_SPECS, type OptionKind, type OptionSpec } from "../dist/options.js";
import { AI_SDK_TOOLS_OPTIONS, toAISDKTools } from "../dist/adapters/ai.js";
import { MCP_HTTP_OPTIONS, MCP_SERVER_OPTIONS, MCP_STDIO_OPTIONS, McpStdioTransport, createMcpHttpServer, createMcpServer } from "../dist/adapters/mcp-entry.js";
import { OPENAI_TOOLS_OPTIONS } from "../dist/adapters/providers.js";
import { parseMcpArgs } from "../dist/cli.js";
import { tempWorkspace } from "./helpers.js";

type Call = (options: unknown) => unknown;

/** A value of the right kind (every factory accepts it alone). */
function validValue(kind: OptionKind): unknown {
  switch (kind.type) {
    case "boolean":
      return true;
    case "integer":
      return kind.max;
    case "enum":
      return kind.values[0];
    case "string":
      return "/tmp";
    case "strings":
    case "integers":
    case "paths":
      return [];
    case "path":
      return "/";
    case "function":
      return () => undefined;
    case "array":
      return [];
    case "object":
    case "record":
      return {};
    case "oneOf":
      return validValue(kind.kinds[0]!);
    case "null":
      return null;
  }
}

/** Values of the wrong type or range, each with what the message must say. */
function wrongValues(kind: OptionKind): unknown[] {
  switch (kind.type) {
    case "boolean":
      return ["true", 1];
    case "integer":
      return [String(kind.min), kind.min + 0.5, kind.max + 1, kind.min - 1];
    case "enum":
      return ["not-a-mode", 1];
    case "string":
      return [1, ["x"], "a\0b"];
    case "strings":
      return ["x", [1]];
    case "integers":
      return [1, ["1"], [kind.max + 1]];
    case "path":
      return ["relative/dir", 1];
    case "paths":
      return ["/", ["relative/dir"]];
    case "function":
      return ["f", {}];
    case "array":
      return ["x", {}];
    case "object":
    case "record":
      return ["x", [], 1];
    case "oneOf":
      return [Symbol("x")];
    case "null":
      return [0];
  }
}

/** `{ a: { b: value } }` for the path ["a", "b"]. */
function nest(path: readonly string[], value: unknown): Record<string, unknown> {
  let out: unknown = value;
  for (let i = path.length - 1; i >= 0; i--) out = { [path[i]!]: out };
  return out as Record<string, unknown>;
}

/** The key with its middle letter left out: `sandox` for `sandbox`. */
function misspell(key: string): string {
  const i = Math.floor(key.length / 2);
  return key.slice(0, i) + key.slice(i + 1);
}

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function throwsType(call: Call, options: unknown, message: RegExp): void {
  let thrown: unknown;
  try {
    call(options);
  } catch (err) {
    thrown = err;
  }
  expect(thrown, `no error for ${String(JSON.stringify(options))}`).toBeInstanceOf(TypeError);
  expect((thrown as Error).message).toMatch(message);
}

/** Every key path of a spec, depth first, with its kind. */
function keyPaths(spec: OptionSpec, prefix: string[] = []): { path: string[]; kind: OptionKind; siblings: string[] }[] {
  const out: { path: string[]; kind: OptionKind; siblings: string[] }[] = [];
  for (const [key, rule] of Object.entries(spec)) {
    out.push({ path: [...prefix, key], kind: rule.kind, siblings: Object.keys(spec) });
    if (rule.kind.type === "object") out.push(...keyPaths(rule.kind.spec, [...prefix, key]));
  }
  return out;
}

/** The generated tests of one options object. */
function strictSuite(name: string, spec: OptionSpec, makeCall: () => Promise<Call>): void {
  describe(`${name} options`, () => {
    for (const { path, kind, siblings } of keyPaths(spec)) {
      const full = path.join(".");
      const last = path[path.length - 1]!;
      const wrong = misspell(last);
      // Skip a misspelling that is itself a valid key (none today).
      if (!siblings.includes(wrong) && last.length >= 3) {
        it(`${full} misspelt is a TypeError naming ${full}`, async () => {
          const call = await makeCall();
          const at = [...path.slice(0, -1), wrong].join(".");
          throwsType(call, nest([...path.slice(0, -1), wrong], validValue(kind)), new RegExp(`${escape(at)}: unknown option; did you mean ${escape(full)}\\?`));
        });
      }
      it(`${full} of the wrong type or range is a TypeError naming ${full}`, async () => {
        const call = await makeCall();
        // A bad element of an array is named by its index (`readPaths[0] must be ...`).
        for (const value of wrongValues(kind)) throwsType(call, nest(path, value), new RegExp(`${escape(full)}(\\[\\d+\\])? must be `));
      });
      it(`${full} of the right kind is accepted`, async () => {
        const call = await makeCall();
        expect(() => call(nest(path, validValue(kind)))).not.toThrow();
      });
    }
    it("an options value that is not a plain object is a TypeError", async () => {
      const call = await makeCall();
      for (const value of ["x", 1, [], new Map()]) throwsType(call, value, /must be a plain object/);
    });
  });
}

const factories = workcell as unknown as Record<string, (root: string, options?: unknown) => unknown>;

describe("every factory declares its options", () => {
  it("each exported create*Tool / createCodingTools has a spec", () => {
    const names = Object.keys(workcell).filter((n) => /^create[A-Za-z]*Tools?$/.test(n));
    expect(names.length).toBeGreaterThanOrEqual(13);
    for (const n of names) expect(OPTION_SPECS, n).toHaveProperty(n);
  });
});

for (const [factory, spec] of Object.entries(OPTION_SPECS)) {
  strictSuite(factory, spec, async () => {
    const { root } = await tempWorkspace();
    return (options) => factories[factory]!(root, options);
  });
}

strictSuite("createMcpServer", MCP_SERVER_OPTIONS, async () => {
  const { root } = await tempWorkspace();
  const tools = [workcell.createReadTool(root)];
  return (options) => createMcpServer(tools, undefined, options as never);
});
strictSuite("createMcpHttpServer", MCP_HTTP_OPTIONS, async () => {
  const { root } = await tempWorkspace();
  // A token (required) and public: true (so a host of any name is accepted; nothing listens).
  return (options) => {
    if (typeof options !== "object" || options === null || Array.isArray(options) || options instanceof Map) {
      return createMcpHttpServer(root, options as never);
    }
    const o = options as Record<string, unknown>;
    const make = o.createTools as ((r: string) => unknown) | undefined;
    return createMcpHttpServer(root, {
      token: "t".repeat(32),
      public: true,
      ...o,
      // The kind's sample string is short; the token's length is checked on its own.
      ...(typeof o.token === "string" ? { token: o.token.padEnd(32, "t") } : {}),
      ...(typeof make === "function" ? { createTools: (r: string) => (make(r) ?? []) as never } : {}),
    } as never);
  };
});
strictSuite("McpStdioTransport", MCP_STDIO_OPTIONS, async () => (options) => new McpStdioTransport(undefined, undefined, options as never));
strictSuite("toAISDKTools", AI_SDK_TOOLS_OPTIONS, async () => {
  const { root } = await tempWorkspace();
  const tools = [workcell.createReadTool(root)];
  return (options) => toAISDKTools(tools, options as never);
});
for (const fn of ["toOpenAITools", "toOpenAIResponsesTools"] as const) {
  strictSuite(fn, OPENAI_TOOLS_OPTIONS, async () => {
    const { root } = await tempWorkspace();
    const tools = [workcell.createReadTool(root)];
    return (options) => workcell[fn](tools, options as never);
  });
}
strictSuite("fromOpenAIToolCall", OPENAI_TOOLS_OPTIONS, async () => (options) =>
  workcell.fromOpenAIToolCall({ id: "1", function: { name: "read_file", arguments: "{}" } }, options as never),
);

describe("the examples of the contract", () => {
  it("names the full path and the nearest key", async () => {
    const { root } = await tempWorkspace();
    expect(() => workcell.createCodingTools(root, { processes: { sandox: "required" } } as never)).toThrow(
      /processes\.sandox: unknown option; did you mean processes\.sandbox\?/,
    );
    expect(() => workcell.createRunCommandTool(root, { denyCommand: ["rm"] } as never)).toThrow(/denyCommand: unknown option; did you mean denyCommands\?/);
    // A tool's option given at the top of createCodingTools points to where it belongs.
    expect(() => workcell.createCodingTools(root, { protect: [] } as never)).toThrow(/protect: unknown option; did you mean guard\.protect\?/);
    expect(() => workcell.createCodingTools(root, { runCommand: { sandbox: "on" } } as never)).toThrow(
      /runCommand\.sandbox must be one of "auto", "required", "off" \(got "on"\)/,
    );
  });

  it("a range owned by the core comes from the core", async () => {
    const { root } = await tempWorkspace();
    const { binding } = await import("../dist/native.js");
    expect(() => workcell.createWriteTool(root, { maxContentBytes: binding.MAX_WRITE_BYTES_CEILING + 1 })).toThrow(
      new RegExp(`maxContentBytes must be an integer from 0 to ${binding.MAX_WRITE_BYTES_CEILING}`),
    );
    expect(() => workcell.createNodeProcessTool(root, { maxOutputBytes: binding.MAX_OUTPUT_CAP + 1 })).toThrow(
      new RegExp(`maxOutputBytes must be an integer from 1 to ${binding.MAX_OUTPUT_CAP}`),
    );
  });

  it("the CLI's flags name the nearest flag", () => {
    expect(() => parseMcpArgs(["--root", "/tmp", "--netwrok"])).toThrow(TypeError);
    expect(() => parseMcpArgs(["--root", "/tmp", "--netwrok"])).toThrow(/--netwrok: unknown option; did you mean --network\?/);
    expect(() => parseMcpArgs(["--root", "/tmp", "--read-paths", "/"])).toThrow(/did you mean --read-path\?/);
    expect(() => parseMcpArgs(["--root", "/tmp", "--timeout-ms", "x"])).toThrow(TypeError);
  });
});

describe("an error names the entry at fault", () => {
  /** The TypeError message `make` throws. */
  function message(make: () => unknown): string {
    try {
      make();
    } catch (err) {
      expect(err).toBeInstanceOf(TypeError);
      return (err as Error).message;
    }
    throw new Error("no error was thrown");
  }

  it("a bad element of an array option is named by its index and value", async () => {
    const { root } = await tempWorkspace();
    expect(message(() => workcell.createCodingTools(root, { processes: { readPaths: ["/tmp", "rel/dir"] } }))).toBe(
      'workcell: createCodingTools: processes.readPaths[1] must be an absolute path (got "rel/dir")',
    );
    expect(message(() => workcell.createCodingTools(root, { sessions: { ports: [5173, 99999] } }))).toBe(
      "workcell: createCodingTools: sessions.ports[1] must be an integer from 1 to 65535 (got 99999)",
    );
  });

  it("a bad value of a name -> value option is named by its key", async () => {
    const { root } = await tempWorkspace();
    expect(message(() => workcell.createNodeProcessTool(root, { env: { LANG: "C", PORT: { value: 1 } } } as never))).toBe(
      "workcell: createNodeProcessTool: env.PORT must be a string without NUL characters (got an object)",
    );
    expect(message(() => workcell.createNodeProcessTool(root, { env: ["NODE_ENV", 3] } as never))).toBe(
      "workcell: createNodeProcessTool: env[1] must be a string (got 3)",
    );
  });

  it("an unknown key inside a union's object is named with its nearest valid key", async () => {
    const { root } = await tempWorkspace();
    expect(message(() => workcell.createCodingTools(root, { processes: { network: { alow: ["npm"] } } } as never))).toBe(
      "workcell: createCodingTools: processes.network.alow: unknown option; did you mean processes.network.allow?",
    );
  });

  it("an error raised while createCodingTools builds its tools names createCodingTools", async () => {
    const { root } = await tempWorkspace();
    for (const options of [
      { processes: { readPaths: ["/nonexistent-workcell-path"] } },
      { processes: { sandbox: "off" as const, network: { allow: ["npm"] } } },
      { processes: { network: { allow: ["https://example.com/x"] } } },
    ]) {
      const m = message(() => workcell.createCodingTools(root, options));
      expect(m).toMatch(/^workcell: createCodingTools\b/);
      expect(m).not.toMatch(/createProcessTools|createRunCommandTool|createNodeProcessTool|createRunTestsTool/);
    }
    expect(message(() => workcell.createCodingTools(root, { processes: { readPaths: ["/nonexistent-workcell-path"] } }))).toMatch(
      /^workcell: createCodingTools: readPaths\[0\]: .*"\/nonexistent-workcell-path"/,
    );
    // Called on its own, a factory still names itself.
    expect(message(() => workcell.createRunCommandTool(root, { readPaths: ["/nonexistent-workcell-path"] }))).toMatch(/^workcell: createRunCommandTool: readPaths\[0\]/);
  });
});
