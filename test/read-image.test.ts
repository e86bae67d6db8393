// Images through read_file (recognized by content, at most 5 MiB, base64 with the file's hash)
// and on to the frameworks: an MCP image content block, an AI SDK image part, an Anthropic
// image block.
import { createHash } from "node:crypto";
import { mkdir, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { generateText, stepCountIs } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { describe, expect, test } from "vitest";
import { toAISDKTools } from "workcell/ai";
import { textEditor } from "workcell/anthropic";
import { createMcpServer } from "workcell/mcp";
import { MAX_IMAGE_BYTES, createCodingTools, createReadTool, executeToolCall, ToolRegistry, hashFile } from "../dist/index.js";
import { tempWorkspace } from "./helpers.js";

/** A 1x1 transparent PNG. */
export const PNG_1X1 = Buffer.from(
  "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000b4944415478da636000020000050001e9fadcd80000000049454e44ae426082",
  "hex",
);

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};

async function workspaceWithPng() {
  const ws = await tempWorkspace();
  await mkdir(join(ws.root, "img"));
  await writeFile(join(ws.root, "img/dot.png"), PNG_1X1);
  return ws;
}

describe("read_file images", () => {
  test("png_round_trips_byte_for_byte_with_hash", async () => {
    const { root } = await workspaceWithPng();
    const out = (await createReadTool(root).execute({ path: "img//dot.png" }, { signal: new AbortController().signal })) as any;
    expect(Object.keys(out).sort()).toEqual(["bytes", "data", "hash", "mimeType", "path"]);
    expect(out.path).toBe("img/dot.png");
    expect(out.mimeType).toBe("image/png");
    expect(out.bytes).toBe(PNG_1X1.length);
    expect(Buffer.from(out.data, "base64").equals(PNG_1X1)).toBe(true);
    expect(out.data).toBe(PNG_1X1.toString("base64"));
    expect(out.hash).toBe(createHash("sha256").update(PNG_1X1).digest("hex"));
    expect(out.hash).toBe(await hashFile(root, "img/dot.png"));
  });

  test("image_type_comes_from_content_not_the_name", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "photo.txt"), Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10, 0x4a, 0x46, 0x49, 0x46, 0, 1]));
    await writeFile(join(root, "a.gif"), Buffer.from("GIF89a\x01\x00\x01\x00\x00\x00\x00;", "latin1"));
    await writeFile(join(root, "w"), Buffer.concat([Buffer.from("RIFF"), Buffer.from([26, 0, 0, 0]), Buffer.from("WEBPVP8L")]));
    await writeFile(join(root, "fake.png"), "not an image\n");
    const read = createReadTool(root);
    const c = { signal: new AbortController().signal };
    expect(((await read.execute({ path: "photo.txt" }, c)) as any).mimeType).toBe("image/jpeg");
    expect(((await read.execute({ path: "a.gif" }, c)) as any).mimeType).toBe("image/gif");
    expect(((await read.execute({ path: "w" }, c)) as any).mimeType).toBe("image/webp");
    expect(await read.execute({ path: "fake.png" }, c)).toMatchObject({ path: "fake.png", content: "not an image\n" });
  });

  test("image_over_5_mib_is_file_too_large_with_a_hint", async () => {
    const { root } = await tempWorkspace();
    const big = Buffer.alloc(MAX_IMAGE_BYTES + 1);
    PNG_1X1.copy(big);
    await writeFile(join(root, "big.png"), big);
    await writeFile(join(root, "max.png"), big.subarray(0, MAX_IMAGE_BYTES));
    const registry = new ToolRegistry([createReadTool(root)]);
    const r = await executeToolCall(registry, { type: "toolCall", id: "1", name: "read_file", arguments: { path: "big.png" } }, new AbortController().signal);
    expect(r.isError).toBe(true);
    const e = JSON.parse(r.content).error;
    expect(e.code).toBe("FILE_TOO_LARGE");
    expect(e.message).toContain("image/png");
    expect(e.hint).toContain("5 MiB");
    const ok = await executeToolCall(registry, { type: "toolCall", id: "2", name: "read_file", arguments: { path: "max.png" } }, new AbortController().signal);
    expect(JSON.parse(ok.content).bytes).toBe(MAX_IMAGE_BYTES);
  });

  test("a_window_of_an_image_says_to_read_it_whole", async () => {
    const { root } = await workspaceWithPng();
    const registry = new ToolRegistry([createReadTool(root)]);
    const r = await executeToolCall(registry, { type: "toolCall", id: "1", name: "read_file", arguments: { path: "img/dot.png", offset: 1 } }, new AbortController().signal);
    const e = JSON.parse(r.content).error;
    expect(e.code).toBe("INVALID_UTF8");
    expect(e.message).toContain("image/png");
    expect(e.hint).toContain("without offset and limit");
  });

  test("image_behind_symlink_outside_is_refused", async () => {
    const { parent, root } = await tempWorkspace();
    await writeFile(join(parent, "secret.png"), PNG_1X1);
    await symlink("../secret.png", join(root, "s.png"));
    const registry = new ToolRegistry([createReadTool(root)]);
    const r = await executeToolCall(registry, { type: "toolCall", id: "1", name: "read_file", arguments: { path: "s.png" } }, new AbortController().signal);
    expect(JSON.parse(r.content).error.code).toBe("PATH_ESCAPES_WORKSPACE");
  });
});

describe("images through the adapters", () => {
  test("mcp_answers_an_image_read_with_an_image_content_block", async () => {
    const { root } = await workspaceWithPng();
    const server = createMcpServer(createCodingTools(root));
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client({ name: "workcell-test", version: "1.0.0" });
    await client.connect(clientSide);
    try {
      const r = (await client.callTool({ name: "read_file", arguments: { path: "img/dot.png" } })) as any;
      expect(r.isError).toBe(false);
      expect(r.content[0]).toEqual({ type: "image", data: PNG_1X1.toString("base64"), mimeType: "image/png" });
      expect(Buffer.from(r.content[0].data, "base64").equals(PNG_1X1)).toBe(true);
      expect(JSON.parse(r.content[1].text)).toEqual({
        path: "img/dot.png",
        bytes: PNG_1X1.length,
        hash: createHash("sha256").update(PNG_1X1).digest("hex"),
        mimeType: "image/png",
      });
      // A text file still answers with one text block.
      await writeFile(join(root, "t.txt"), "hi\n");
      const t = (await client.callTool({ name: "read_file", arguments: { path: "t.txt" } })) as any;
      expect(t.content).toHaveLength(1);
      expect(t.content[0].type).toBe("text");
    } finally {
      await client.close();
      await server.close();
    }
  });

  test("ai_sdk_sends_the_model_an_image_part", async () => {
    const { root } = await workspaceWithPng();
    const model = new MockLanguageModelV3({
      doGenerate: [
        {
          content: [{ type: "tool-call" as const, toolCallId: "c1", toolName: "read_file", input: JSON.stringify({ path: "img/dot.png" }) }],
          finishReason: { unified: "tool-calls" as const, raw: "tool_calls" },
          usage,
          warnings: [],
        },
        { content: [{ type: "text" as const, text: "a dot" }], finishReason: { unified: "stop" as const, raw: "stop" }, usage, warnings: [] },
      ],
    });
    const result = await generateText({ model, tools: toAISDKTools(createCodingTools(root)), prompt: "look", stopWhen: stepCountIs(3) });
    expect(result.text).toBe("a dot");
    const tool = (model.doGenerateCalls[1]!.prompt as any[]).filter((m) => m.role === "tool").flatMap((m) => m.content);
    expect(tool[0].output.type).toBe("content");
    const [image, text] = tool[0].output.value;
    expect(image).toEqual({ type: "image-data", data: PNG_1X1.toString("base64"), mediaType: "image/png" });
    expect(Buffer.from(image.data, "base64").equals(PNG_1X1)).toBe(true);
    expect(JSON.parse(text.text)).toMatchObject({ path: "img/dot.png", bytes: PNG_1X1.length, mimeType: "image/png" });
  });

  test("anthropic_text_editor_views_an_image_as_an_image_block", async () => {
    const { root } = await workspaceWithPng();
    const editor = textEditor(createCodingTools(root));
    const r = await editor.handle({ command: "view", path: "img/dot.png" });
    expect(r.is_error).toBe(false);
    expect((r.content as any[])[0]).toEqual({ type: "image", source: { type: "base64", media_type: "image/png", data: PNG_1X1.toString("base64") } });
  });
});
