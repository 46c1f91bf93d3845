import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Schema } from "effect"
import {
  AccountPaused,
  E2eChannelUseSendMessage,
  InsufficientScope,
  invalidArgument,
  InvalidArguments,
  isToolFailure,
  LockedDown,
  NotConnected,
  NotInChannel,
  QuotaExceeded,
  Refused,
  SendQueueFull,
  Timeout,
  TOOL_ERROR_CODES,
  type ToolFailure,
  ToolFailurePayload,
  toToolFailurePayload,
  UnknownNetwork
} from "../../src/schema/ToolErrors.js"

const cases: ReadonlyArray<{ readonly failure: ToolFailure; readonly error: string; readonly message: string }> = [
  {
    failure: new InsufficientScope({ tool: "send_message" }),
    error: "insufficient-scope",
    message: "send_message needs a read-write token; this token has the read scope"
  },
  {
    failure: new AccountPaused({ tool: "send_message" }),
    error: "account-paused",
    message: "the account is paused: only read tools can be called, not send_message"
  },
  {
    failure: new UnknownNetwork({ networkId: 9 }),
    error: "unknown-network",
    message: "no network with id 9 on this account; list_networks shows the ids"
  },
  {
    failure: new InvalidArguments({ message: "limit: must be an integer from 1 to 500, got 501" }),
    error: "invalid-arguments",
    message: "limit: must be an integer from 1 to 500, got 501"
  },
  {
    failure: new NotConnected({ networkId: 2 }),
    error: "not-connected",
    message: "network 2 is not connected; connect_network starts a connection"
  },
  {
    failure: new NotInChannel({ networkId: 2, channel: "#x" }),
    error: "not-in-channel",
    message: "not in #x on network 2; join_channel first"
  },
  {
    failure: new E2eChannelUseSendMessage({ networkId: 2, target: "#secret" }),
    error: "e2e-channel-use-send-message",
    message: "#secret is end-to-end encrypted: send_raw would send plaintext, use send_message"
  },
  {
    failure: new LockedDown({ networkId: 2, host: "irc.example.org" }),
    error: "locked-down",
    message: "this instance does not allow connecting to irc.example.org"
  },
  {
    failure: new Refused({ numeric: "482", text: "You're not channel operator" }),
    error: "refused",
    message: "the IRC server refused (482): You're not channel operator"
  },
  {
    failure: new Timeout({ operation: "the b list query for #x", seconds: 10 }),
    error: "timeout",
    message: "the b list query for #x got no answer within 10 s; try again"
  },
  {
    failure: new QuotaExceeded({ limit: "channels", max: 50 }),
    error: "quota-exceeded",
    message: 'limit reached: at most 50 channels on this network (limit "channels"); remove one first or ask the operator'
  }
]

describe("toToolFailurePayload", () => {
  it.each(cases)("$error", ({ error, failure, message }) => {
    const payload = toToolFailurePayload(failure)
    expect(payload).toEqual(
      failure._tag === "Refused"
        ? { ok: false, error, message, numeric: failure.numeric, text: failure.text }
        : { ok: false, error, message }
    )
    expect(Schema.decodeUnknownSync(ToolFailurePayload, { onExcessProperty: "error" })(payload)).toEqual(payload)
  })

  it("words the variants without a network or a bound", () => {
    expect(toToolFailurePayload(new NotConnected({}))).toEqual({
      ok: false,
      error: "not-connected",
      message: "no network of the account is connected; connect_network starts a connection"
    })
    expect(toToolFailurePayload(new Timeout({ operation: "the b list query for #x" }))).toEqual({
      ok: false,
      error: "timeout",
      message: "the b list query for #x got no answer; try again"
    })
  })

  it("covers every wire code of the decisions exactly once", () => {
    expect(cases.map((c) => toToolFailurePayload(c.failure).error)).toEqual([...TOOL_ERROR_CODES])
  })

  it("a full outgoing queue is a timeout that says nothing was sent, with its numbers", () => {
    const full = new SendQueueFull({ networkId: 3, lines: 2, waiting: 63, capacity: 64, seconds: 126 })
    expect(toToolFailurePayload(full)).toEqual({
      ok: false,
      error: "timeout",
      message: "network 3 is pacing its lines to stay under the server's flood limit and its queue is full " +
        "(63 of 64 lines waiting, about 126 s to send); this call needed 2 more lines and nothing was sent; try again later"
    })
    expect(isToolFailure(full)).toBe(true)
  })

  it("refused carries numeric and text", () => {
    expect(toToolFailurePayload(new Refused({ numeric: "482", text: "no" }))).toMatchObject({ numeric: "482", text: "no" })
  })

  it("invalidArgument names the field", () => {
    expect(invalidArgument("changes[0].letter", "is not a mode of this network", "Z").message).toBe(
      "changes[0].letter: is not a mode of this network, got \"Z\""
    )
  })
})

describe("tool failures as Effect errors", () => {
  it.effect("fail an Effect with the tagged error and are recognised", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(new NotConnected({ networkId: 1 }))
      expect(Exit.isFailure(exit)).toBe(true)
      const caught = yield* Effect.flip(new NotInChannel({ networkId: 1, channel: "#a" }))
      expect(caught._tag).toBe("NotInChannel")
      expect(isToolFailure(caught)).toBe(true)
      expect(isToolFailure(new Error("boom"))).toBe(false)
    }))
})
