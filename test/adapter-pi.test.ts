// workcell/pi through Pi's own agent: @mariozechner/pi-agent-core's Agent runs the tools that
// pi-ai's faux provider (its scripted test model) asks for.
import { Agent, type AgentTool } from "@mariozechner/pi-agent-core";
import { fauxAssistantMessage, fauxText, fauxToolCall, registerFauxProvider, type Context } from "@mariozechner/pi-ai";
import { afterEach, describe, expect, test } from "vitest";
import { ToolCallError, toPiTools } from "workcell/pi";
import { createCodingTools, createReadTool } from "../dist/index.js";
import { tempWorkspace, workspaceWithFile, waitingTool } from "./helpers.js";

const registrations: { unregister(): void }[] = [];
afterEach(() => {
  while (registrations.length) registrations.pop()!.unregister();
});

function faux() {
  const r = registerFauxProvider();
  registrations.push(r);
  return r;
}

function toolResults(agent: Agent): any[] {
  return agent.state.messages.filter((m: any) => m.role === "toolResult");
}

describe("toPiTools", () => {
  test("has Pi's AgentTool shape: name, label, description, the JSON Schema as parameters", async () => {
    const { root } = await tempWorkspace();
    const coding = createCodingTools(root);
    // Assignable to Pi's own type (checked by tsc in test/typecheck.test.ts too).
    const tools: AgentTool<any>[] = toPiTools(coding);
    expect(tools.map((t) => t.name)).toEqual(coding.map((t) => t.name));
    const read = tools.find((t) => t.name === "read_file")!;
    expect(read.label).toBe("Read file");
    expect(read.description).toBe(coding.find((t) => t.name === "read_file")!.description);
    expect(read.parameters).toEqual(coding.find((t) => t.name === "read_file")!.parameters);
  });

  test("pi_tools_are_reachable_by_name_and_a_host_tool_named_like_an_array_member_shadows_nothing", async () => {
    const { root } = await tempWorkspace();
    const pi = toPiTools(createCodingTools(root));
    expect(pi.read_file.name).toBe("read_file");
    expect(pi.read_file).toBe(pi.find((t) => t.name === "read_file"));
    const host = (name: string) => ({ ...waitingTool().tool, name });
    const odd = toPiTools([host("map"), host("0"), host("length"), host("other")]);
    expect(odd.map((t) => t.name)).toEqual(["map", "0", "length", "other"]);
    expect(odd).toHaveLength(4);
    expect(odd[0]!.name).toBe("map");
    expect((odd as unknown as Record<string, { name: string }>).other!.name).toBe("other");
  });

  test("Pi's agent loop runs the model's tool call; the model reads the output JSON next turn", async () => {
    const { root } = await workspaceWithFile();
    const provider = faux();
    let seen: Context | undefined;
    provider.setResponses([
      fauxAssistantMessage(fauxToolCall("read_file", { path: "./src/a.txt" }, { id: "call-1" }), { stopReason: "toolUse" }),
      (context) => {
        seen = context;
        return fauxAssistantMessage(fauxText("alpha it is"));
      },
    ]);
    const agent = new Agent({ initialState: { model: provider.getModel(), tools: toPiTools(createCodingTools(root)) } });
    await agent.prompt("read src/a.txt");
    const [result] = toolResults(agent);
    expect(result).toMatchObject({ toolCallId: "call-1", toolName: "read_file", isError: false });
    expect(result.content).toEqual([{ type: "text", text: JSON.stringify({ path: "src/a.txt", content: "alpha\n", bytes: 6, hash: "b6a98d9ce9a2d9149288fa3df42d377c3e42737afdcdaf714e33c0a100b51060" }) }]);
    expect(result.details).toEqual({ path: "src/a.txt", content: "alpha\n", bytes: 6, hash: "b6a98d9ce9a2d9149288fa3df42d377c3e42737afdcdaf714e33c0a100b51060" });
    // The model's next request carried the tool's schema and the result.
    expect(seen!.tools!.map((t) => t.name)).toContain("read_file");
    expect(seen!.messages.some((m) => m.role === "toolResult" && m.toolCallId === "call-1")).toBe(true);
    expect((agent.state.messages.at(-1) as any).content).toEqual([{ type: "text", text: "alpha it is" }]);
  });

  test("refusals reach the model as error results with the code and hint", async () => {
    const { root } = await workspaceWithFile();
    const provider = faux();
    provider.setResponses([
      fauxAssistantMessage(
        [fauxToolCall("read_file", { path: "../secret.txt" }, { id: "dotdot" }), fauxToolCall("read_file", { path: "link" }, { id: "link" })],
        { stopReason: "toolUse" },
      ),
      fauxAssistantMessage(fauxText("ok, staying inside")),
    ]);
    const agent = new Agent({ initialState: { model: provider.getModel(), tools: toPiTools(createCodingTools(root)) } });
    await agent.prompt("try to escape");
    const results = toolResults(agent);
    expect(results.map((r) => [r.toolCallId, r.isError])).toEqual([
      ["dotdot", true],
      ["link", true],
    ]);
    const dotdot = JSON.parse(results[0].content[0].text).error;
    expect(dotdot).toMatchObject({ code: "TOOL_ARGUMENTS_INVALID", message: "INVALID_RELATIVE_PATH", hint: expect.any(String) });
    const link = JSON.parse(results[1].content[0].text).error;
    expect(link.code).toBe("PATH_ESCAPES_WORKSPACE");
    expect(results[1].content[0].text).not.toContain("TOP-SECRET-VALUE");
  });

  test("execute resolves with content and details, throws ToolCallError, rejects with AbortError", async () => {
    const { root } = await workspaceWithFile();
    const [read] = toPiTools([createReadTool(root)]);
    await expect(read!.execute("c1", { path: "src/a.txt" })).resolves.toEqual({
      content: [{ type: "text", text: '{"path":"src/a.txt","content":"alpha\\n","bytes":6,"hash":"b6a98d9ce9a2d9149288fa3df42d377c3e42737afdcdaf714e33c0a100b51060"}' }],
      details: { path: "src/a.txt", content: "alpha\n", bytes: 6, hash: "b6a98d9ce9a2d9149288fa3df42d377c3e42737afdcdaf714e33c0a100b51060" },
    });
    const err = await read!.execute("c2", { path: "nope.txt" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ToolCallError);
    expect(err).toMatchObject({ code: "FILE_NOT_FOUND", toolCallId: "c2", toolName: "read_file" });
    const aborted = new AbortController();
    aborted.abort();
    await expect(read!.execute("c3", { path: "src/a.txt" }, aborted.signal)).rejects.toMatchObject({ name: "AbortError" });
  });

  test("agent.abort() reaches the running tool's AbortSignal", async () => {
    const slow = waitingTool();
    const provider = faux();
    provider.setResponses([fauxAssistantMessage(fauxToolCall("slow", {}, { id: "s" }), { stopReason: "toolUse" }), fauxAssistantMessage("never")]);
    const agent = new Agent({ initialState: { model: provider.getModel(), tools: toPiTools([slow.tool]) } });
    const run = agent.prompt("go");
    await slow.running;
    expect(slow.signal!.aborted).toBe(false);
    agent.abort();
    await run;
    expect(slow.signal!.aborted).toBe(true);
    const [result] = toolResults(agent);
    expect(result).toMatchObject({ toolCallId: "s", isError: true });
  });
});
