// Recorded shapes of the providers' own tools, built from their public documentation: the
// exact input a model emits and the exact answer expected.
// - Anthropic, "Text editor tool" (docs.anthropic.com/en/docs/agents-and-tools/tool-use/text-editor-tool):
//   the primes.py walkthrough (view, str_replace), the create / insert / directory view examples,
//   and the "Handle errors" section (File not found, multiple matches, no match).
// - Anthropic, "Bash tool" (bash_20250124): `{ command }` and `{ restart: true }`.
// - OpenAI, "Apply patch" (Responses `apply_patch_call` with create_file / update_file (V4A
//   diff) / delete_file, answered with `apply_patch_call_output` `{ status, output }`).
// - OpenAI, "Shell" (Responses `shell_call` with `action: { commands, timeout_ms,
//   max_output_length }`, answered with `shell_call_output` and one `{ stdout, stderr,
//   outcome }` per command).

/** primes.py as the Anthropic walkthrough shows it (line 19 misses its colon). */
export const PRIMES_PY = [
  "def is_prime(n):",
  '    """Check if a number is prime."""',
  "    if n <= 1:",
  "        return False",
  "    if n <= 3:",
  "        return True",
  "    if n % 2 == 0 or n % 3 == 0:",
  "        return False",
  "    i = 5",
  "    while i * i <= n:",
  "        if n % i == 0 or n % (i + 2) == 0:",
  "            return False",
  "        i += 6",
  "    return True",
  "",
  "def get_primes(limit):",
  '    """Generate a list of prime numbers up to the given limit."""',
  "    primes = []",
  "    for num in range(2, limit + 1)",
  "        if is_prime(num):",
  "            primes.append(num)",
  "    return primes",
  "",
].join("\n");

export const anthropicTextEditor = {
  definition: { type: "text_editor_20250728", name: "str_replace_based_edit_tool" },
  viewFile: {
    toolUse: { type: "tool_use", id: "toolu_01AbCdEfGhIjKlMnOpQrStU", name: "str_replace_based_edit_tool", input: { command: "view", path: "primes.py" } },
    // "1: def is_prime(n):\n2:     \"\"\"Check if a number is prime.\"\"\"\n3: ..." as in the walkthrough.
    result: {
      type: "tool_result",
      tool_use_id: "toolu_01AbCdEfGhIjKlMnOpQrStU",
      content: PRIMES_PY.split("\n")
        .slice(0, -1)
        .map((l, i) => `${i + 1}: ${l}`)
        .join("\n"),
      is_error: false,
    },
  },
  viewRange: {
    input: { command: "view", path: "primes.py", view_range: [16, 19] },
    content: [
      "16: def get_primes(limit):",
      '17:     """Generate a list of prime numbers up to the given limit."""',
      "18:     primes = []",
      "19:     for num in range(2, limit + 1)",
    ].join("\n"),
  },
  viewDirectory: { input: { command: "view", path: "src/" } },
  strReplace: {
    toolUse: {
      type: "tool_use",
      id: "toolu_01PqRsTuVwXyZAbCdEfGh",
      name: "str_replace_based_edit_tool",
      input: { command: "str_replace", path: "primes.py", old_str: "    for num in range(2, limit + 1)", new_str: "    for num in range(2, limit + 1):" },
    },
    result: { type: "tool_result", tool_use_id: "toolu_01PqRsTuVwXyZAbCdEfGh", content: "Successfully replaced text at exactly one location.", is_error: false },
  },
  create: {
    input: {
      command: "create",
      path: "test_primes.py",
      file_text:
        "import unittest\nimport primes\n\nclass TestPrimes(unittest.TestCase):\n    def test_is_prime(self):\n        self.assertTrue(primes.is_prime(2))\n        self.assertTrue(primes.is_prime(3))\n        self.assertFalse(primes.is_prime(4))\n\nif __name__ == '__main__':\n    unittest.main()",
    },
  },
  insert: {
    // The documentation's example names the text new_str; the 2025-07-28 schema names it
    // insert_text. Both are accepted.
    input: {
      command: "insert",
      path: "primes.py",
      insert_line: 0,
      new_str:
        '"""Module for working with prime numbers.\n\nThis module provides functions to check if a number is prime\nand to generate a list of prime numbers up to a given limit.\n"""\n',
    },
  },
  errors: {
    fileNotFound: "Error: File not found",
    multipleMatches: "Error: Found 3 matches for replacement text. Please provide more context to make a unique match.",
    noMatch: "Error: No match found for replacement. Please check your text and try again.",
  },
} as const;

export const anthropicBash = {
  definition: { type: "bash_20250124", name: "bash" },
  command: { type: "tool_use", id: "toolu_01BashListFiles", name: "bash", input: { command: "ls -la *.py" } },
  restart: { type: "tool_use", id: "toolu_01BashRestart", name: "bash", input: { restart: true } },
} as const;

export const openaiApplyPatch = {
  definition: { type: "apply_patch" },
  createFile: {
    type: "apply_patch_call",
    id: "apc_08f3d96c87a585390069118b594f7481a088b16cda7d9415fe",
    call_id: "call_Rjsqzz96C5xzPb0jUWJFRTNW",
    status: "completed",
    operation: { type: "create_file", path: "lib/fib.py", diff: "+def fib(n):\n+    if n < 2:\n+        return n\n+    return fib(n - 1) + fib(n - 2)\n" },
  },
  updateFile: {
    type: "apply_patch_call",
    id: "apc_08f3d96c87a585390069118b5f2d2081a0b0a2c2d8a6e7f1c3",
    call_id: "call_UpdateFib0000000000000000",
    status: "completed",
    operation: {
      type: "update_file",
      path: "lib/fib.py",
      diff: "@@ def fib(n):\n-    if n < 2:\n-        return n\n+    if n < 2:  # base case\n+        return n\n",
    },
  },
  deleteFile: {
    type: "apply_patch_call",
    id: "apc_08f3d96c87a585390069118b6a4f4c81a0a5d1e2f3c4b5a6d7",
    call_id: "call_DeleteFib0000000000000000",
    status: "completed",
    operation: { type: "delete_file", path: "lib/fib.py" },
  },
  fib: "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
  fibUpdated: "def fib(n):\n    if n < 2:  # base case\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
} as const;

export const openaiShell = {
  definition: { type: "shell" },
  call: {
    type: "shell_call",
    id: "sh_68c4f1a2b3c4d5e6f7a8b9c0d1e2f3a4",
    call_id: "call_ShellListAndCount000000",
    status: "completed",
    action: { commands: ["ls", "wc -l notes.txt"], timeout_ms: 120000, max_output_length: 4096 },
  },
} as const;
