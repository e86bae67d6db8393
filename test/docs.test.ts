// The front page and the docs beside it: the README stays one screen (at most 15 KB); every
// `js`/`ts` block of the README runs as written against the built package; the blocks of the
// docs pages that are whole programs (they start with an import) type-check against the
// package's published types; every relative link of the README and of docs/ resolves, anchors
// included; and the docs index links every page. (test/package-install.test.ts checks the same
// links inside the packed package.)
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, test } from "vitest";

const REPO = fileURLToPath(new URL("..", import.meta.url));
const README = join(REPO, "README.md");
const DOCS = join(REPO, "docs");

/** Every markdown file the links are checked in: the README and docs/*.md. */
export const MARKDOWN = [README, ...readdirSync(DOCS).filter((f) => f.endsWith(".md")).map((f) => join(DOCS, f))];

/** The fenced code blocks of a markdown text, with their language. */
function codeBlocks(text: string): { lang: string; code: string }[] {
  return [...text.matchAll(/^```(\w*)\n([\s\S]*?)^```/gm)].map((m) => ({ lang: m[1]!, code: m[2]! }));
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, "")
    .replace(/ /g, "-");
}

function anchors(text: string): Set<string> {
  const out = new Set<string>();
  const seen = new Map<string, number>();
  for (const m of text.replace(/^```[\s\S]*?^```/gm, "").matchAll(/^#{1,6} (.*)$/gm)) {
    const s = slug(m[1]!);
    const n = seen.get(s) ?? 0;
    out.add(n === 0 ? s : `${s}-${n}`);
    seen.set(s, n + 1);
  }
  return out;
}

/** The relative links of a markdown text (outside code blocks): `[text](target)`. */
export function relativeLinks(text: string): string[] {
  const prose = text.replace(/^```[\s\S]*?^```/gm, "").replace(/`[^`\n]*`/g, "``");
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t));
}

describe("the README", () => {
  const text = readFileSync(README, "utf8");

  test("is at most 15 KB", () => {
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(15 * 1024);
  });

  test("opens with what it is, then install, the quick start, the clone commands and what is guaranteed", () => {
    const sections = [...text.matchAll(/^## (.*)$/gm)].map((m) => m[1]);
    expect(sections.slice(0, 4)).toEqual(["Install", "Quick start", "From a clone", "What is guaranteed"]);
    expect(text).toContain("npm install workcell");
    for (const command of ["npm install", "npm test", "npm run demo"]) expect(text).toContain(`\n${command} `);
    expect(text).toContain("(docs/security.md)");
  });

  test("every js/ts block runs as written against the built package", { timeout: 120_000 }, () => {
    const blocks = codeBlocks(text).filter((b) => ["js", "ts", "mjs", "javascript", "typescript"].includes(b.lang));
    expect(blocks.length).toBeGreaterThan(0);
    // A fresh project with workcell installed (linked to this checkout) and its own temp dir,
    // so whatever a block leaves behind is removed with it.
    const project = realpathSync(mkdtempSync(join(tmpdir(), "workcell-readme-")));
    try {
      mkdirSync(join(project, "node_modules"), { recursive: true });
      mkdirSync(join(project, "tmp"));
      symlinkSync(REPO, join(project, "node_modules", "workcell"));
      writeFileSync(join(project, "package.json"), JSON.stringify({ name: "readme-blocks", private: true, type: "module" }));
      blocks.forEach((block, i) => {
        expect(block.lang, "the README's blocks are JavaScript, to run with node as they are").toBe("js");
        const file = join(project, `block-${i}.mjs`);
        writeFileSync(file, block.code);
        const r = spawnSync(process.execPath, [file], { cwd: project, encoding: "utf8", timeout: 90_000, env: { ...process.env, TMPDIR: join(project, "tmp") } });
        expect({ status: r.status, stderr: r.stderr }, block.code).toEqual({ status: 0, stderr: "" });
        if (i === 0) {
          // The quick start: the tool names, a file read, a refused escape, a command's result.
          expect(r.stdout).toContain("read_file");
          expect(r.stdout).toContain('"content":"hello\\n"');
          expect(r.stdout).toContain('"code":"TOOL_ARGUMENTS_INVALID"');
          expect(r.stdout).toContain('"exitCode":0');
        }
      });
    } finally {
      rmSync(project, { recursive: true, force: true });
    }
  });
});

describe("the docs", () => {
  test("docs/README.md is the index: it links every page of docs/", () => {
    const index = readFileSync(join(DOCS, "README.md"), "utf8");
    const linked = new Set(relativeLinks(index).map((l) => l.split("#")[0]));
    const pages = readdirSync(DOCS).filter((f) => f.endsWith(".md") && f !== "README.md");
    expect(pages.filter((p) => !linked.has(p))).toEqual([]);
    expect(relativeLinks(readFileSync(README, "utf8"))).toContain("docs/README.md");
  });

  test("every relative link of the README and of docs/ resolves, anchors included", () => {
    const broken: string[] = [];
    for (const file of MARKDOWN) {
      for (const link of relativeLinks(readFileSync(file, "utf8"))) {
        const [path, anchor] = link.split("#") as [string, string | undefined];
        const target = path === "" ? file : join(dirname(file), decodeURIComponent(path));
        const where = `${relative(REPO, file)}: ${link}`;
        if (!existsSync(target)) {
          broken.push(`${where} (no such file)`);
          continue;
        }
        if (anchor !== undefined && anchor !== "" && target.endsWith(".md") && !anchors(readFileSync(target, "utf8")).has(anchor)) {
          broken.push(`${where} (no such heading)`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  test("the blocks of the docs that are whole programs type-check against the published types", { timeout: 120_000 }, () => {
    // The names a snippet takes from its surroundings (the model, the provider clients...),
    // declared where the snippet does not import them.
    const AMBIENT: [string, string][] = [
      ["model", "any"], ["abortSignal", "AbortSignal"], ["signal", "AbortSignal"], ["root", "string"], ["prompt", "string"],
      ["anthropic", "any"], ["openai", "any"], ["messages", "any[]"], ["input", "any[]"], ["results", "any[]"],
    ];
    const ambient = (code: string) =>
      [...AMBIENT.filter(([name]) => !new RegExp(`^import (\\{[^}]*\\b${name}\\b[^}]*\\}|${name}\\b)`, "m").test(code)).map(([n, t]) => `declare const ${n}: ${t};`), "export {};"].join("\n");
    const dir = join(REPO, "test", "typecheck", "docs-blocks");
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    try {
      const files: string[] = [];
      for (const file of MARKDOWN) {
        codeBlocks(readFileSync(file, "utf8"))
          .filter((b) => b.lang === "ts" && /^import /.test(b.code))
          .forEach((b, i) => {
            const name = `${relative(REPO, file).replace(/[/.]/g, "_")}_${i}.ts`;
            writeFileSync(join(dir, name), `${ambient(b.code)}\n${b.code}`);
            files.push(name);
          });
      }
      expect(files.length).toBeGreaterThanOrEqual(5);
      writeFileSync(
        join(dir, "tsconfig.json"),
        JSON.stringify({ extends: "../tsconfig.json", compilerOptions: { noUnusedLocals: false }, files }),
      );
      const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
      const r = spawnSync(process.execPath, [tsc, "-p", join(dir, "tsconfig.json")], { encoding: "utf8" });
      expect(r.stdout + r.stderr).toBe("");
      expect(r.status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
