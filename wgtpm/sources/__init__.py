"""Where modules come from: the proxy protocol and the direct sources.

Every source implements :class:`wgtpm.sources.Source`; the resolver, cache and
verification above them do not know which one they talk to.
"""

from ._base import FileRequest, RevInfo, Source

__all__ = ["FileRequest", "RevInfo", "Source"]
