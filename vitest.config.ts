import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
    // Most files spend their time waiting on processes and deadlines, not on the CPU: at least
    // two at once, where Vitest's default (the cores minus one) runs one at a time on two cores
    // (the suite alone: 296 s against about 600).
    maxWorkers: Math.max(2, availableParallelism() - 1),
  },
});
