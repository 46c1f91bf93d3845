/**
 * Fuzzed frames of the browser WebSocket (`/api/ws`) and the judge of their answers: tool calls with deep nesting (at
 * every depth up to the 1 MiB frame limit) in each argument of each tool, in the arguments themselves, and in the
 * frame's own members (`id`, `name`, `focus.focused`, `read`'s `networkId`, `target` and `messageId`). Each frame is
 * one that the server answers with exactly one `result` or `error` frame, and within the 1 MiB frame limit; the judge:
 * that answer, short, never the "internal error" of a call that failed, and the socket still open.
 */
import fc from "fast-check"
import { MCP_BODY_LIMIT_BYTES } from "../../../src/schema/Limits.js"
import { deepJson, encodeJson } from "./HostileValues.js"
import { deepToolCall, type McpTarget } from "./McpCases.js"

export interface SocketCase {
  readonly label: string
  readonly frame: string
}

const deepMember: fc.Arbitrary<SocketCase> = fc
  .tuple(
    fc.constantFrom("call id", "call name", "focus focused", "read networkId", "read target", "read messageId"),
    deepJson(MCP_BODY_LIMIT_BYTES - 1024)
  )
  .map(([member, deep]) => {
    const frames: Record<typeof member, unknown> = {
      "call id": { type: "call", id: deep, name: "list_networks", arguments: {} },
      "call name": { type: "call", id: "fuzz", name: deep, arguments: {} },
      "focus focused": { type: "focus", focused: deep },
      "read networkId": { type: "read", networkId: deep, target: "#belay", messageId: 1 },
      "read target": { type: "read", networkId: 1, target: deep, messageId: 1 },
      "read messageId": { type: "read", networkId: 1, target: "#belay", messageId: deep }
    }
    return { label: `deep ${member} (${deep.kind} ${deep.depth})`, frame: encodeJson(frames[member]).toString("utf8") }
  })

/** Frames within the server's frame limit (/mcp's body limit): a larger one closes the socket (1009), by design. */
export const socketCase = (target: McpTarget): fc.Arbitrary<SocketCase> =>
  fc.oneof(
    {
      weight: 4,
      arbitrary: fc.tuple(deepToolCall(target), fc.nat()).map(([envelope, n]) => {
        const params = (envelope.body as { params: { name: string; arguments: unknown } }).params
        return {
          label: envelope.label,
          frame: encodeJson({ type: "call", id: `fuzz-${n}`, name: params.name, arguments: params.arguments }).toString("utf8")
        }
      })
    },
    { weight: 1, arbitrary: deepMember }
  ).filter((c) => Buffer.byteLength(c.frame) <= MCP_BODY_LIMIT_BYTES)

/** What is wrong with the answer to a frame (undefined: none came in time), or undefined when the server may give it. */
export const judgeSocket = (answer: Readonly<Record<string, unknown>> | undefined): string | undefined => {
  if (answer === undefined) return "no answer"
  const size = JSON.stringify(answer).length
  if (size > 32 * 1024) return `an answer of ${size} characters`
  const { type, message } = answer
  if (type !== "result" && type !== "error") return `an answer of type ${String(type)}`
  if (type === "error" && (typeof message !== "string" || message === "internal error")) return `error ${JSON.stringify(message)}`
  return undefined
}
