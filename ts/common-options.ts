// The options every tool factory takes: the descriptions a tool gives the model and the
// approval options of ts/approval.ts (kept apart from ts/options.ts, the option kinds and checks,
// which every module may import).
import type { ApprovalFor, ApprovalOptions } from "./approval.js";
import { option, type OptionSpecOf } from "./options.js";

/** `descriptions`: which description a tool gives the model. */
export type DescriptionStyle = "compact" | "full";

/** The options every tool factory takes (the approval options of ts/approval.ts included). */
export interface CommonToolOptions extends ApprovalOptions {
  /**
   * `"compact"` (default): what a model needs to call the tool right; the limits and rules it
   * meets are in the hints of the errors it gets. `"full"`: every rule, limit and output field.
   */
  descriptions?: DescriptionStyle;
}

/** The spec entries of {@link CommonToolOptions}, spread into every factory's spec. */
export const COMMON_TOOL_OPTIONS = {
  descriptions: option.enum(["compact", "full"], "compact (default) or full tool descriptions"),
  approve: option.function("asks the person: (request, { signal }) => boolean | { allow, reason?, remember? }"),
  approvalFor: option.object(
    {
      write: option.enum(["allow", "ask"], "whether writing calls ask"),
      process: option.enum(["allow", "ask", "review"], "whether process calls ask (review: after a staged run, with its change)"),
      grant: option.enum(["deny", "ask"], "whether calls with grants ask or are refused"),
    } satisfies OptionSpecOf<ApprovalFor>,
    "which calls ask",
  ),
  rules: option.array("rules checked before asking; the first match decides"),
  onAudit: option.function("called after every call with an event (never the content)"),
} as const satisfies OptionSpecOf<CommonToolOptions>;
