/**
 * UpstreamLabels: IRCv3 labeled-response between Belay and the upstream server, as soju does it, so that the answer
 * to a command a client passed upstream (WHO, WHOIS, LIST, a MODE query, KICK…) goes back to that client alone and
 * with its own label (docs/decisions/irc-listener.md "Replies and labels"). When the upstream enabled labeled-response, such a
 * command is sent with a label of Belay's, `bly<process>.<session>.<n>` (`mint`); the session remembers which of its
 * client's labels it stands for (none when the client sent none: the answer is still routed to it alone). `route`
 * reads each feed line: a reply carrying one of our labels, the lines of a `labeled-response` batch opened with one,
 * and that batch's end belong to the session that sent the command. Numerics, `ACK` and the batch's own lines go to it
 * alone; other lines (a KICK, a user MODE) change what every client sees, so they go to every client, labelled for
 * that one only. The answer to a JOIN (`mint(session, true)`: its label ends in `.j`) is the channel every client is
 * now in: its numerics (topic, NAMES) go to every client too. Without labeled-response upstream there is nothing to
 * correlate: the command gets an empty `ACK` and its replies reach every client unlabelled.
 *
 * Concurrency rule: `route` runs in the listener's synchronous routing steps (LiveOrder's routes), `mint` on the
 * sessions' fibers; both are synchronous.
 */
import * as Crypto from "node:crypto"
import { parseLine } from "../irc/IrcLine.js"
import type { FeedLine } from "../services/events/NetworkFeed.js"

/** Where a feed line that answers a labelled command goes, and how its session renders it. */
export interface LabelledReply {
  /** The session that sent the command. */
  readonly session: number
  /** Belay's label for it (the session maps it back to its client's). */
  readonly label: string
  /** To that session alone (numerics but a JOIN's, ACK, the labeled-response batch's BATCH lines), else to every session. */
  readonly originOnly: boolean
  /** The line carries the label itself (a single reply, an ACK, or the BATCH that opens the answer). */
  readonly carriesLabel: boolean
  /** The labeled-response batch the line opens, closes or belongs to. */
  readonly batch: string | undefined
  /** The answer is complete with this line (the single reply, or the batch's end). */
  readonly done: boolean
}

const NUMERIC = /^\d{3}$/
const JOIN_SUFFIX = ".j"

/** The label was minted for a JOIN, whose numerics every client gets. */
const forEveryone = (label: string) => label.endsWith(JOIN_SUFFIX)

/** The value of one tag in a line's raw tag section (our labels and batch references need no unescaping). */
const tagValue = (tags: string, key: string): string | undefined => {
  for (const item of tags.split(";")) {
    if (item === key) return ""
    if (item.startsWith(`${key}=`)) return item.slice(key.length + 1)
  }
  return undefined
}

export const makeUpstreamLabels = () => {
  const prefix = `bly${Crypto.randomBytes(3).toString("hex")}.`
  let next = 0
  /** Open labeled-response batches of the upstreams: `${networkId} ${ref}` → who asked. */
  const batches = new Map<string, { readonly session: number; readonly label: string }>()

  const sessionOf = (label: string): number | undefined => {
    if (!label.startsWith(prefix)) return undefined
    const id = Number(label.slice(prefix.length, label.indexOf(".", prefix.length)))
    return Number.isSafeInteger(id) ? id : undefined
  }

  const route = (feed: FeedLine): LabelledReply | undefined => {
    const raw = feed.line
    const tagged = raw.charCodeAt(0) === 64
    if (!tagged && (batches.size === 0 || !raw.includes(" BATCH -"))) return undefined
    const tags = tagged ? raw.slice(1, raw.indexOf(" ")) : ""
    const label = tagValue(tags, "label")
    const inBatch = tagValue(tags, "batch")
    const session = label === undefined ? undefined : sessionOf(label)
    const open = inBatch === undefined ? undefined : batches.get(`${feed.networkId} ${inBatch}`)
    if (session === undefined && open === undefined && batches.size === 0) return undefined
    const line = parseLine(raw)
    if (line === undefined) return undefined
    const ref = line.command === "BATCH" ? (line.params[0] ?? "") : ""
    if (session !== undefined && label !== undefined) {
      if (ref.startsWith("+")) {
        batches.set(`${feed.networkId} ${ref.slice(1)}`, { session, label })
        return { session, label, originOnly: true, carriesLabel: true, batch: ref.slice(1), done: false }
      }
      const originOnly = (NUMERIC.test(line.command) && !forEveryone(label)) || line.command === "ACK"
      return { session, label, originOnly, carriesLabel: true, batch: undefined, done: true }
    }
    if (open !== undefined) {
      const originOnly = NUMERIC.test(line.command) && !forEveryone(open.label)
      return { ...open, originOnly, carriesLabel: false, batch: inBatch, done: false }
    }
    if (ref.startsWith("-")) {
      const key = `${feed.networkId} ${ref.slice(1)}`
      const closing = batches.get(key)
      if (closing === undefined) return undefined
      batches.delete(key)
      return { ...closing, originOnly: true, carriesLabel: false, batch: ref.slice(1), done: true }
    }
    return undefined
  }

  return {
    /** A new label of Belay's for a command session `session` sends upstream; `everyone`: a JOIN (see above). */
    mint: (session: number, everyone = false): string => `${prefix}${session}.${++next}${everyone ? JOIN_SUFFIX : ""}`,
    route,
    /** Forgets a network's open batches (its connection ended: they will never close). */
    forgetNetwork: (networkId: number): void => {
      for (const key of batches.keys()) if (key.startsWith(`${networkId} `)) batches.delete(key)
    }
  }
}

export type UpstreamLabels = ReturnType<typeof makeUpstreamLabels>
