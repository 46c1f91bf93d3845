/**
 * Multiline: IRCv3 draft/multiline batches from the member's IRC clients (docs/contract.md "The IRC client listener";
 * docs/decisions/irc-listener.md "Client tags, REDACT and multiline upstream"). A client with the capability opens
 * `BATCH +<ref> draft/multiline <target>`, sends PRIVMSG (or NOTICE) lines tagged `batch=<ref>` (a line tagged
 * `draft/multiline-concat` continues the previous one) and closes with `BATCH -<ref>`; Belay collects the lines and
 * sends the message upstream in one go through NetworkControl.rawLines (the send queue takes all of it or none):
 * as one multiline batch where the upstream has draft/multiline and the message fits its limits, cut into several
 * where it does not, else as separate lines, the client's line composition kept (TaggedMessages.multilineLines).
 * Stored as the upstream delivers it: each line a message of the member's, from the echo or as sent.
 *
 * Refused with the extension's FAIL BATCH codes, and nothing sent: a batch past MULTILINE_MAX_BYTES or
 * MULTILINE_MAX_LINES, a line to another target, a line of another command, a concat blank line, a message of blank
 * lines only, a batch opened inside another (the open one is dropped too), a line naming a batch that is not open,
 * another batch type. A refused batch's remaining lines are dropped quietly up to its end. At most one batch is open
 * per connection, and it holds at most MULTILINE_MAX_LINES lines and MULTILINE_MAX_BYTES bytes, so an unterminated
 * batch costs no more than a full one until the connection ends.
 *
 * Concurrency rule: runs on the connection's session fiber only.
 */
import { Effect, Option } from "effect"
import { foldCase } from "../irc/CaseMapping.js"
import type { IrcLine } from "../irc/IrcLine.js"
import { isMiddleParam } from "../irc/Safety.js"
import {
  CLIENT_TAGS_MAX_BYTES,
  clientOnlyTags,
  CONCAT_TAG,
  type MessageCommand,
  MULTILINE_BATCH,
  multilineLines,
  parseMultilineLimits,
  tagBytes
} from "../irc/TaggedMessages.js"
import { prefixAllowance } from "../irc/TextSplit.js"
import { MULTILINE_CAP, MULTILINE_MAX_BYTES, MULTILINE_MAX_LINES } from "./CapNegotiation.js"
import { type Downstream, fail, nextBatchId, OWN_SENDS, withLabel } from "./Downstream.js"
import type { ListenerDeps } from "./ListenerDeps.js"
import { expectMultilineEcho } from "./MultilineEcho.js"
import type { OpenMultiline } from "./MultilineState.js"

/** A batch reference a client may use: one short word (batch §"Reference tag"). */
const REF = /^[A-Za-z0-9\-_.+/=]{1,64}$/

const invalid = (d: Downstream, description: string) => fail(d, "BATCH", "MULTILINE_INVALID", [], description)

/**
 * Under the client's label (labeled-response, on the opening BATCH) when the batch has one and nothing else is being
 * answered: what `run` replies is the batch's labelled answer; `later` says whether the answer is still to come (the
 * batch goes on, or its echo will carry the label) when `run` replied nothing.
 */
const answering = (d: Downstream, open: OpenMultiline, run: Effect.Effect<void>, later: () => boolean) =>
  open.label === undefined || d.collecting !== undefined
    ? run
    : withLabel(d, open.label, Effect.tap(run, () => {
      if (later() && d.collecting?.length === 0) d.labelPassed = true
      else open.label = undefined
    }))

/** True when `line` is a client's BATCH or a line of its open multiline batch, which this module then handles. */
export const onMultiline = (deps: ListenerDeps, d: Downstream, line: IrcLine, label: string | undefined): Effect.Effect<boolean> =>
  Effect.suspend(() => {
    const ref = line.tags.get("batch")
    if (line.command === "BATCH") {
      if (ref !== undefined) {
        invalid(d, "Nested batches are not accepted")
        return Effect.as(Effect.sync(() => drop(d)), true)
      }
      return Effect.as(onBatch(deps, d, line, label), true)
    }
    if (ref === undefined) return Effect.succeed(false)
    const open = d.multiline
    if (open === undefined || open.ref !== ref) {
      invalid(d, `No multiline batch ${ref} is open`)
      return Effect.succeed(true)
    }
    if (open.failed) return Effect.succeed(true)
    return Effect.as(answering(d, open, Effect.sync(() => addLine(d, open, line)), () => !open.failed), true)
  })

/** The open batch is refused: FAIL sent by the caller; its lines are dropped until its end. */
const refuse = (open: OpenMultiline) => {
  open.failed = true
  open.parts.length = 0
}

const drop = (d: Downstream) => {
  if (d.multiline !== undefined) refuse(d.multiline)
}

const addLine = (d: Downstream, open: OpenMultiline, line: IrcLine) => {
  const [target, text] = line.params
  if (line.command !== "PRIVMSG" && line.command !== "NOTICE") {
    invalid(d, `A multiline batch holds PRIVMSG or NOTICE lines only, not ${line.command}`)
    return refuse(open)
  }
  if (open.command !== undefined && open.command !== line.command) {
    invalid(d, "A multiline batch holds lines of one command")
    return refuse(open)
  }
  if (target === undefined || text === undefined) {
    invalid(d, "A line of the batch has no target or text")
    return refuse(open)
  }
  if (target.toLowerCase() !== open.target.toLowerCase()) {
    fail(d, "BATCH", "MULTILINE_INVALID_TARGET", [open.target, target], "Invalid multiline target")
    return refuse(open)
  }
  const concat = line.tags.has(CONCAT_TAG)
  if (concat && text === "") {
    invalid(d, "A blank line may not continue the previous one")
    return refuse(open)
  }
  if (open.parts.length + 1 > MULTILINE_MAX_LINES) {
    fail(d, "BATCH", "MULTILINE_MAX_LINES", [String(MULTILINE_MAX_LINES)], "Multiline batch max-lines exceeded")
    return refuse(open)
  }
  const bytes = open.bytes + Buffer.byteLength(text) + (open.parts.length > 0 && !concat ? 1 : 0)
  if (bytes > MULTILINE_MAX_BYTES) {
    fail(d, "BATCH", "MULTILINE_MAX_BYTES", [String(MULTILINE_MAX_BYTES)], "Multiline batch max-bytes exceeded")
    return refuse(open)
  }
  open.command = line.command
  open.bytes = bytes
  open.parts.push({ text, concat: open.parts.length > 0 && concat })
}

const onBatch = (deps: ListenerDeps, d: Downstream, line: IrcLine, label: string | undefined) =>
  Effect.gen(function*() {
    const [reference, type, target] = line.params
    if (reference === undefined || reference.length < 2) return invalid(d, "BATCH needs a reference tag")
    const ref = reference.slice(1)
    if (reference.startsWith("-")) {
      const open = d.multiline
      if (open === undefined || open.ref !== ref) return invalid(d, `No multiline batch ${ref} is open`)
      d.multiline = undefined
      if (!open.failed) yield* answering(d, open, send(deps, d, open), () => open.echoes)
      return
    }
    if (!reference.startsWith("+") || !REF.test(ref)) return invalid(d, "Invalid batch reference tag")
    if (!d.caps.enabled.has(MULTILINE_CAP)) return invalid(d, "Enable draft/multiline to send multiline batches")
    if (type !== MULTILINE_BATCH) return invalid(d, "Only draft/multiline batches are accepted")
    if (d.multiline !== undefined) {
      drop(d)
      d.multiline = undefined
      return invalid(d, "A multiline batch is already open")
    }
    if (target === undefined || !isMiddleParam(target) || target.includes(",")) {
      return invalid(d, "A multiline batch needs one target")
    }
    // The message's client-only tags ride on the opening BATCH (multiline §"Message tags").
    const tags = clientOnlyTags(line.tags)
    const failed = tagBytes(tags) > CLIENT_TAGS_MAX_BYTES
    if (failed) invalid(d, "The batch's client tags are too long")
    d.multiline = { ref, target, tags, command: undefined, parts: [], bytes: 0, failed, label: failed ? undefined : label, echoes: false }
    // The batch is answered at its end, or at its first refusal (labeled-response: the label is on the opening BATCH).
    if (!failed && label !== undefined) d.labelPassed = true
  })

/** The collected message goes upstream (see the module comment). */
const send = (deps: ListenerDeps, d: Downstream, open: OpenMultiline) =>
  Effect.gen(function*() {
    const network = d.network
    const command: MessageCommand = open.command ?? "PRIVMSG"
    if (open.parts.every((p) => p.text === "")) return invalid(d, "A multiline message may not be blank")
    if (network === undefined) {
      return fail(d, "BATCH", "INVALID_TARGET", [], "This is a control connection; sign in as account/network")
    }
    if (d.signedIn?.readOnly !== false) return fail(d, "BATCH", "READ_ONLY", [], "This sign-in may only read")
    const upstream = yield* deps.control.upstream(network.id)
    if (Option.isNone(upstream)) return fail(d, "BATCH", "NOT_CONNECTED", [open.target], "The network is not connected")
    const u = upstream.value
    const status = yield* deps.control.status(network.id)
    const text = open.parts.map((p, i) => (i === 0 || p.concat ? p.text : `\n${p.text}`)).join("")
    const targetFolded = foldCase(status.caseMapping, open.target)
    const encrypted = yield* deps.control.isEncrypted(network.id, open.target)
    // With echo-message the stored lines come back as the batch (MultilineEcho.ts); else they are only recognised.
    const echoes = !encrypted && d.caps.enabled.has("echo-message")
    if (!echoes) {
      if (d.ownSends.length >= OWN_SENDS) d.ownSends.shift()
      d.ownSends.push({ targetFolded, remaining: text, label: undefined })
    }
    const undo = () => {
      if (!echoes) d.ownSends.pop()
    }
    if (encrypted) {
      // End-to-end encrypted: each line of text through `say`, which encrypts (client tags are not sent).
      const said = yield* Effect.either(Effect.forEach(
        text.split("\n").filter((l) => l !== ""),
        (l) => deps.control.say(network.id, command === "NOTICE" ? "notice" : "privmsg", open.target, l),
        { discard: true }
      ))
      if (said._tag === "Left") {
        undo()
        failWith(d, open.target, said.left)
      }
      return
    }
    const multiline = u.caps.includes(MULTILINE_CAP) && u.caps.includes("batch")
    const limits = multiline ? parseMultilineLimits(u.capValues?.[MULTILINE_CAP]) : undefined
    const lines = multilineLines(
      {
        command,
        target: open.target,
        parts: open.parts,
        tags: u.caps.includes("message-tags") ? open.tags : new Map(),
        prefixAllowance: prefixAllowance({
          nick: u.nick,
          ...(u.user !== null ? { user: u.user } : {}),
          ...(u.host !== null ? { host: u.host } : {})
        })
      },
      limits,
      () => nextBatchId(d)
    )
    // The member's other clients get it as the batch it was (ClientTagMemo.ts); known before its lines can be stored.
    const message = { target: open.target, targetFolded, command, parts: open.parts, tags: open.tags }
    const others = [...deps.hub.ofNetwork(network.id)].map((s) => s.id).filter((id) => id !== d.id)
    deps.clientTags.rememberMultiline(network.id, message, others)
    const sent = yield* Effect.either(deps.control.rawLines(network.id, lines))
    if (sent._tag === "Left") {
      undo()
      deps.clientTags.forgetMultiline(message)
      return failWith(d, open.target, sent.left)
    }
    if (echoes) {
      expectMultilineEcho(d, { target: open.target, targetFolded, command, parts: open.parts, tags: open.tags, label: open.label })
      open.echoes = true
    }
  })

/** A port failure as `FAIL BATCH <CODE> <target>`, its tag in upper snake case as ClientCommands answers them. */
const failWith = (d: Downstream, target: string, error: { readonly _tag: string }) => {
  const code = error._tag.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toUpperCase()
  const message = "message" in error && typeof error.message === "string" && error.message !== "" ? error.message : error._tag
  fail(d, "BATCH", code, [target], message)
}
