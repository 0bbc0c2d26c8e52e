"""wgt.mod: parse, check, edit and print (docs/design.md section 3).

>>> mf = parse(b"module github.com/acme/xor\\nwgt 0.1\\n", "wgt.mod")
>>> mf.add_require("github.com/acme/base", "v0.1.0")
>>> print(mf.format().decode(), end="")
module github.com/acme/xor
wgt 0.1
<BLANKLINE>
require github.com/acme/base v0.1.0
"""

from ._rules import (
    LANGUAGE_VERSION,
    Artifact,
    DenyLicense,
    Exclude,
    License,
    ModFile,
    Module,
    Replace,
    Require,
    Retract,
    Select,
    Trust,
    WgtVersion,
    is_local_path,
    new,
    parse,
)
from ._syntax import FileSyntax, format_syntax, parse_syntax

__all__ = [
    "LANGUAGE_VERSION",
    "Artifact",
    "DenyLicense",
    "Exclude",
    "FileSyntax",
    "License",
    "ModFile",
    "Module",
    "Replace",
    "Require",
    "Retract",
    "Select",
    "Trust",
    "WgtVersion",
    "format_syntax",
    "is_local_path",
    "new",
    "parse",
    "parse_syntax",
]
