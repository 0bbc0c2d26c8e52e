"""The errors of wgtpm's OCI client (re-exported by :mod:`wgtpm.oci.client`)."""

from __future__ import annotations

from .._errors import WgtpmError


class OciError(WgtpmError):
    """A registry answered something wgtpm cannot use (the message says what)."""


class OciNotFoundError(OciError):
    """The repository, tag, manifest or blob does not exist (HTTP 404)."""


class RegistryAuthError(OciError):
    """The registry refused the credentials, or wants some and none were found."""
