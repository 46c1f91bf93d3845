// MemberList: the channel's members, highest status first then by nick, each a button that opens the nick's note;
// away members are dimmed and say so. The status symbol (@, +…) has its own column, as wide as its glyph needs, so
// that it never covers the nick and the nicks line up.
import type { Member } from "../Protocol.js"
import { nickColorClass } from "../NickColor.js"

const RANK = "~&@%+"
const rank = (m: Member) => {
  const i = RANK.indexOf(m.prefix[0] ?? "")
  return i === -1 ? RANK.length : i
}

export const sortMembers = (members: Iterable<Member>): ReadonlyArray<Member> =>
  [...members].sort((a, b) => rank(a) - rank(b) || a.nick.localeCompare(b.nick, undefined, { sensitivity: "base" }))

export const MemberList = ({ members, onNick }: { readonly members: ReadonlyMap<string, Member>; readonly onNick: (nick: string) => void }) => {
  const sorted = sortMembers(members.values())
  return (
    <aside id="members" class="members" role="complementary" aria-label="Members">
      <h2>{sorted.length} {sorted.length === 1 ? "member" : "members"}</h2>
      <ul>
        {sorted.map((m) => (
          <li key={m.nick}>
            <button type="button" class={`member ${nickColorClass(m.nick)}${m.away ? " away" : ""}`} onClick={() => onNick(m.nick)}>
              <span class="prefix">{m.prefix.slice(0, 1)}</span>
              <span class="name">{m.nick}</span>
              {m.away ? <span class="visually-hidden"> (away)</span> : null}
            </button>
          </li>
        ))}
      </ul>
    </aside>
  )
}
