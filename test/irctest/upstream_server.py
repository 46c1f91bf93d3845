"""upstream_server: the IRC server behind Belay in an irctest run — its configuration written to a test's directory,
and the command that runs it in the foreground on loopback at `port` (ngircd, or InspIRCd 3 with the IRCv3 modules a
bouncer relays). Pure file writing; no state, no process.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import List

NGIRCD_CONFIG = """[Global]
\tName = My.Little.Server
\tInfo = irctest upstream behind Belay
\tListen = 127.0.0.1
\tPorts = {port}
\tAdminInfo1 = Belay
\tAdminEMail = irctest@belay.test
\tPidFile = {directory}/ngircd.pid
[Limits]
\tMaxNickLength = 32
\tMaxConnectionsIP = 0
\tMaxJoins = 0
\tMaxPenaltyTime = 0
[Options]
\tMorePrivacy = no
\tPAM = no
\tIdent = no
\tDNS = no
[Operator]
\tName = operuser
\tPassword = operpassword
"""

# InspIRCd 3 (Debian bookworm's 3.15) with the IRCv3 modules a bouncer relays; the same shape as
# test/support/InspIRCd.ts writes for the system test.
INSPIRCD_CONFIG = """<config format="xml">
<server name="My.Little.Server" description="irctest upstream behind Belay" network="BelayTest">
<admin name="Belay" nick="belay" email="irctest@belay.test">
<bind address="127.0.0.1" port="{port}" type="clients">
<connect allow="*" timeout="60" localmax="1000" globalmax="1000" maxconnwarn="off" limit="100000"
  threshold="100000" commandrate="100000000" fakelag="off" recvq="100000" sendq="1000000" resolvehostnames="no"
  useident="no">
<dns timeout="1">
<pid file="{directory}/inspircd.pid">
<files motd="{directory}/motd.txt">
<options allowzerolimit="no">
<security hideserver="" announceinvites="dynamic">
<limits maxnick="32" maxchan="64" maxmodes="20" maxident="11" maxhost="64" maxquit="255" maxtopic="307"
  maxkick="255" maxreal="128" maxgecos="128" maxaway="200">
<log method="file" type="* -USERINPUT -USEROUTPUT" level="default" target="{directory}/inspircd.log">
<oper name="operuser" password="operpassword" host="*@*" type="Admin">
<type name="Admin" classes="ServerLink" vhost="netadmin.belay.test">
<class name="ServerLink" commands="*" privs="*" usermodes="*" chanmodes="*">
<module name="cap">
<module name="ircv3">
<module name="ircv3_capnotify">
<module name="ircv3_ctctags">
<module name="ircv3_msgid">
<module name="ircv3_servertime">
<module name="ircv3_echomessage">
<module name="ircv3_batch">
<module name="ircv3_labeledresponse">
<module name="ircv3_accounttag">
<module name="ircv3_invitenotify">
<module name="ircv3_chghost">
<module name="setname">
<module name="namesx">
<module name="uhnames">
"""


def upstream_server(kind: str, directory: Path, port: int) -> List[str]:
    """Writes `kind`'s configuration in `directory` and returns its command line."""
    if kind == "inspircd":
        (directory / "inspircd.conf").write_text(INSPIRCD_CONFIG.format(port=port, directory=directory))
        (directory / "motd.txt").write_text("irctest\n")
        command = ["inspircd", "--nofork", "--nopid", "--config", str(directory / "inspircd.conf")]
        # InspIRCd refuses to run as root unless told to.
        return command + (["--runasroot"] if os.getuid() == 0 else [])
    if kind != "ngircd":
        raise ValueError(f"BELAY_IRCTEST_UPSTREAM must be ngircd or inspircd, not {kind!r}")
    (directory / "ngircd.conf").write_text(NGIRCD_CONFIG.format(port=port, directory=directory))
    return ["ngircd", "--nodaemon", "--config", str(directory / "ngircd.conf")]
