"""irctest server controller for Palaver.

irctest (https://github.com/progval/irctest) loads it with `--controller palaver` when this
directory is on PYTHONPATH; `make irctest IRCTEST=<irctest checkout>` builds Palaver and does that.
Each test case starts one fresh single-node Palaver in a temporary data directory, on the ports
irctest hands out, and stops it afterwards.

The binary is $PALAVER_BIN, else `palaver` on PATH.
"""

import os
from pathlib import Path
import shutil
import subprocess
from typing import Optional, Set

from irctest import patma
from irctest.basecontrollers import (
    BaseServerController,
    DirectoryBasedController,
    NotImplementedByController,
)
from irctest.cases import BaseServerTestCase
from irctest.specifications import Capabilities, OptionalBehaviors

# OPER credentials irctest's oper tests use (operuser / operpassword), as a bcrypt hash (cost 4).
OPER_NAME = "operuser"
OPER_HASH = "$2a$04$bKb6k5A6yuFA2wx.iJtxcuT2dojHQAjHd5ZPK/I2sjJml7p4spxjG"

SERVER_NAME = "My.Little.Server"

# The longest password REGISTER takes (gateway/irc: MaxAccountPassword).
MAX_ACCOUNT_PASSWORD = 400


def _env_set(name: str) -> Set[str]:
    return {item for item in os.environ.get(name, "").split(",") if item}


class PalaverController(BaseServerController, DirectoryBasedController):
    software_name = "Palaver"
    _port_wait_interval = 0.05

    # SASL mechanisms irctest may try besides Palaver's own ATPROTO-CHALLENGE (which irctest does
    # not speak): PALAVER_IRCTEST_SASL=PLAIN,SCRAM-SHA-256 declares the client-password logins.
    supported_sasl_mechanisms: Set[str] = _env_set("PALAVER_IRCTEST_SASL")
    # PALAVER_IRCTEST_ACCOUNT_REGISTRATION=1: the node offers draft/account-registration and
    # registerUser creates hosted accounts with REGISTER, for the tests that need an account.
    account_registration = os.environ.get("PALAVER_IRCTEST_ACCOUNT_REGISTRATION") == "1"
    supports_sts = False
    extban_mute_char = "m"  # ISUPPORT EXTBAN=,m: +b m:<mask> mutes

    capabilities = frozenset(
        (
            Capabilities.ACCOUNT_NOTIFY,
            Capabilities.ACCOUNT_TAG,
            Capabilities.AWAY_NOTIFY,
            Capabilities.BATCH,
            Capabilities.ECHO_MESSAGE,
            Capabilities.EXTENDED_JOIN,
            Capabilities.EXTENDED_MONITOR,
            Capabilities.LABELED_RESPONSE,
            Capabilities.MESSAGE_TAGS,
            Capabilities.MULTILINE,
            Capabilities.MULTI_PREFIX,
            Capabilities.READ_MARKER,
            Capabilities.SERVER_TIME,
            Capabilities.SETNAME,
        )
    )

    optional_behaviors = frozenset(
        (
            OptionalBehaviors.BAN_EXCEPTION_MODE,
            OptionalBehaviors.ELIST_U,
            OptionalBehaviors.INVITE_EXCEPTION_MODE,
            OptionalBehaviors.MULTI_KICK,
        )
    )

    isupport = {
        "BOT": "B",
        "CASEMAPPING": "ascii",
        "ELIST": patma.StrRe(".*U.*"),
        "INVEX": "I",
        "MONITOR": patma.ANYSTR,
        "MSGREFTYPES": patma.StrRe("(timestamp,msgid|msgid,timestamp)"),
        "PREFIX": "(ohv)@%+",
        "STATUSMSG": "@%+",
        "TARGMAX": patma.ANYSTR,
        "UTF8ONLY": None,
        "WHOX": None,
    }

    def _binary(self) -> str:
        binary = os.environ.get("PALAVER_BIN") or shutil.which("palaver")
        if not binary:
            raise RuntimeError("set PALAVER_BIN or put palaver on PATH")
        return binary

    def run(
        self,
        hostname: str,
        port: int,
        *,
        password: Optional[str],
        ssl: bool,
        run_services: bool,
        faketime: Optional[str],
        websocket_hostname: Optional[str] = None,
        websocket_port: Optional[int] = None,
    ) -> None:
        if ssl:
            raise NotImplementedByController("TLS listener in this controller")
        if faketime:
            raise NotImplementedByController("faketime")
        assert self.proc is None
        self.create_config()
        assert self.directory
        self.hostname = hostname
        self.port = port
        # irctest hands out 0.0.0.0: Palaver listens on loopback only, which clients reach alike.
        bind = "127.0.0.1"

        (_, http_port) = self.get_hostname_and_port()
        (_, raft_port) = self.get_hostname_and_port()
        if websocket_hostname and websocket_port:
            # Palaver serves IRC over WebSocket on its HTTP listener.
            http_port = websocket_port
        data = Path(self.directory) / "data"
        args = [
            self._binary(),
            "serve",
            "--server-name",
            SERVER_NAME,
            # LINKS (364) describes the server with it; irctest's LinksTestCase expects this text.
            "--server-info",
            "test server",
            "--data",
            str(data),
            "--irc-addr",
            f"{bind}:{port}",
            "--tls-addr",
            "",
            "--http-addr",
            f"{bind}:{http_port}",
            "--raft-addr",
            f"{bind}:{raft_port}",
            "--oper",
            f"{OPER_NAME}:{OPER_HASH}",
            "--join-history",
            "-1",
            "--max-conns-per-ip",
            "-1",
            "--max-http-conns-per-ip",
            "-1",
            "--no-av",
            # irctest sends faster than a client may (as ergo's controller turns off its fakelag).
            "--no-flood-limits",
            "--irc-metadata-3",
            # An account's login rejoins the channels its last session was in (read_marker's
            # testReadMarkerPersistsAcrossReconnect), as ergo's always-on clients do.
            "--rejoin",
            "--log-level",
            "debug" if self.debug_mode else "error",
        ]
        if self.account_registration:
            # irctest registers many accounts from one address, with short passwords.
            args += ["--account-registration", "--account-registration-per-hour", "1000",
                     "--account-registration-min-password", "1"]
            if self.test_config.account_registration_requires_email:
                # E-mail verification: REGISTER then needs an address and mails a code through
                # this relay. irctest's e-mail cases stop at FAIL REGISTER INVALID_EMAIL, so no
                # relay listens on the port: a valid address would be answered with
                # FAIL REGISTER TEMPORARILY_UNAVAILABLE (the code could not be mailed).
                (_, smtp_port) = self.get_hostname_and_port()
                args += ["--account-registration-smtp", f"{bind}:{smtp_port}",
                         "--account-registration-smtp-from", "irc@my.little.server",
                         "--account-registration-smtp-tls", "none"]
            if self.test_config.account_registration_before_connect:
                args += ["--account-registration-before-connect"]
        if password is not None:
            password_file = Path(self.directory) / "irc-password"
            password_file.write_text(password + "\n")
            args += ["--irc-password-file", str(password_file)]
        self.proc = self.execute(args)

    def wait_for_services(self) -> None:
        # Palaver has no separate services: its accounts are DIDs, handled by the server itself.
        pass

    def registerUser(
        self,
        case: BaseServerTestCase,
        username: str,
        password: Optional[str] = None,
    ) -> None:
        if not self.account_registration:
            raise NotImplementedByController("account registration")
        assert password
        if len(password.encode()) > MAX_ACCOUNT_PASSWORD:
            # REGISTER takes the password in one IRC line (512 bytes), so at most 400 bytes.
            raise NotImplementedByController(f"REGISTER of a password over {MAX_ACCOUNT_PASSWORD} bytes")
        client = case.addClient(show_io=False)
        case.sendLine(client, "CAP LS 302")
        case.sendLine(client, "CAP REQ draft/account-registration")
        case.sendLine(client, "NICK " + username)
        case.sendLine(client, "USER r e g :user")
        case.sendLine(client, "CAP END")
        while case.getRegistrationMessage(client).command != "001":
            pass
        case.getMessages(client)
        case.sendLine(client, f"REGISTER * * {password}")
        for msg in case.getMessages(client):
            if msg.command == "REGISTER" and msg.params[:1] == ["SUCCESS"]:
                break
        else:
            raise AssertionError(f"REGISTER of {username} did not succeed")
        case.sendLine(client, "QUIT")
        case.assertDisconnected(client)


def get_irctest_controller_class():
    return PalaverController
