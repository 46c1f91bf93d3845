// Rows: a buffer's messages as the log draws them — a day separator wherever the local date changes, a "new messages"
// line after the read marker, and runs of two or more joins, parts, quits and nick changes folded into one
// expandable row, as chat clients do so that conversation stays readable in busy channels. Reactions (kind `react`)
// are no rows: they are drawn under the message they name (Reactions.ts). Pure.

import { dayLabelOf } from "./Times.js"

export interface LineMessage {
  readonly id: number
  readonly time: string
  readonly kind: string
  readonly nick: string | null
  readonly text: string
}

export type Row<M extends LineMessage> =
  | { readonly kind: "day"; readonly key: string; readonly label: string }
  | { readonly kind: "unread"; readonly key: string }
  | { readonly kind: "line"; readonly key: string; readonly message: M }
  | { readonly kind: "fold"; readonly key: string; readonly messages: ReadonlyArray<M>; readonly summary: string }

const FOLDED = new Set(["join", "part", "quit", "nick"])

const dayOf = (time: string) => {
  const d = new Date(time)
  return `${d.getFullYear()}-${d.getMonth()}-${d.getDate()}`
}

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`

export const foldSummary = (messages: ReadonlyArray<LineMessage>): string => {
  const count = (kind: string) => messages.filter((m) => m.kind === kind).length
  const parts: Array<string> = []
  const joins = count("join")
  const leaves = count("part") + count("quit")
  const nicks = count("nick")
  if (joins > 0) parts.push(`${plural(joins, "join", "joins")}`)
  if (leaves > 0) parts.push(`${plural(leaves, "part", "parts")}`)
  if (nicks > 0) parts.push(`${plural(nicks, "nick change", "nick changes")}`)
  return parts.join(", ")
}

export const rows = <M extends LineMessage>(messages: ReadonlyArray<M>, readMarker: number | null): ReadonlyArray<Row<M>> => {
  const out: Array<Row<M>> = []
  let day: string | null = null
  let run: Array<M> = []
  let markerPlaced = readMarker === null
  const flush = () => {
    if (run.length === 1) out.push({ kind: "line", key: `m${run[0]!.id}`, message: run[0]! })
    else if (run.length > 1) out.push({ kind: "fold", key: `f${run[0]!.id}`, messages: run, summary: foldSummary(run) })
    run = []
  }
  for (const m of messages) {
    if (m.kind === "react") continue
    const d = dayOf(m.time)
    if (d !== day) {
      flush()
      day = d
      out.push({ kind: "day", key: `d${m.id}`, label: dayLabelOf(m.time) })
    }
    if (!markerPlaced && readMarker !== null && m.id > readMarker) {
      flush()
      markerPlaced = true
      if (out.some((r) => r.kind === "line" || r.kind === "fold")) out.push({ kind: "unread", key: "unread" })
    }
    if (FOLDED.has(m.kind)) run.push(m)
    else {
      flush()
      out.push({ kind: "line", key: `m${m.id}`, message: m })
    }
  }
  flush()
  return out
}
