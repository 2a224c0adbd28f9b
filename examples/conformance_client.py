"""The client under test for the official conformance suite (client mode).

The harness runs ``python examples/conformance_client.py <server url>`` with the scenario in
``MCP_CONFORMANCE_SCENARIO`` (and its data in ``MCP_CONFORMANCE_CONTEXT``). Each scenario is a
few lines of ordinary client code: connect (Streamable HTTP; the revision is negotiated, so
the same code runs the handshake-era and the 2026-07-28 scenarios), do what the scenario
asks, exit 0.

It is typed with the generated 2025-11-25 package: the handlers, the ``Client`` it drives and
the models it reads are that revision's, whatever revision the server speaks.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from pydantic import BaseModel

from typedmcp import SKILLS_EXTENSION, OAuthProvider, RequestContext, SkillsClient, SkillVerificationError, connect_http
from typedmcp.auth.client_credentials import ClientCredentials
from typedmcp.auth.grants import EnterpriseManaged, JwtBearer
from typedmcp.auth.oauth import ClientMetadata, OAuthError, auto_approve
from mcp_generated.v2025_11_25 import models
from mcp_generated.v2025_11_25.client import Client, ClientHandlers

#: A placeholder argument value for each JSON type.
DUMMY = {"string": "x", "integer": 1, "number": 1, "boolean": True, "object": {}, "array": []}


def wire(model: BaseModel) -> dict[str, Any]:
    """A model as JSON data with its wire names: exactly what was parsed."""
    return model.model_dump(mode="json", by_alias=True, exclude_unset=True)


class ConformanceHandlers(ClientHandlers):
    """Answers what the mock servers ask: a form is accepted with its fields' defaults."""

    async def elicit(
        self, params: models.ElicitRequestParams, ctx: RequestContext[Client]
    ) -> models.ElicitResult:
        if not isinstance(params, models.ElicitRequestFormParams):
            return models.ElicitResult(action="decline")  # a URL to open: nobody to open it
        properties = wire(params.requested_schema).get("properties", {})
        defaults = {
            name: field["default"]
            for name, field in properties.items()
            if isinstance(field, dict) and "default" in field
        }
        return models.ElicitResult(action="accept", content=defaults)


def sample_arguments(tool: models.Tool) -> dict[str, Any]:
    """Placeholder values for a tool's required arguments, by their JSON type."""
    schema = wire(tool.input_schema)
    properties = schema.get("properties") or {}
    return {
        name: DUMMY.get(str((properties.get(name) or {}).get("type")), "x")
        for name in schema.get("required") or []
    }


async def exercise(client: Client, tools: models.ListToolsResult) -> None:
    """Use every tool, resource and prompt the server offers, once each."""
    for tool in tools.tools:
        await client.call_tool(name=tool.name, arguments=sample_arguments(tool))
    capabilities = client.session.peer_capabilities
    if "resources" in capabilities:
        for resource in (await client.list_resources()).resources:
            await client.read_resource(uri=resource.uri)
    if "prompts" in capabilities:
        for prompt in (await client.list_prompts()).prompts:
            await client.get_prompt(name=prompt.name)


def oauth_for(url: str, scenario: str, context: dict[str, Any]) -> OAuthProvider | None:
    """auth/* scenarios: OAuth with a user agent that approves on its own (the mock
    authorization servers redirect at once), pre-registered credentials when the context
    has them, else a Client ID Metadata Document URL or dynamic registration. The auth
    extensions: client credentials (a secret or a signed assertion), the JWT-bearer grant
    of workload identity, enterprise-managed authorization, DPoP."""
    if not scenario.startswith("auth/"):
        return None
    if scenario == "auth/client-credentials-jwt":
        return ClientCredentials(
            url,
            client_id=context["client_id"],
            private_key=context["private_key_pem"],
            signing_algorithm=context.get("signing_algorithm", "ES256"),
        )
    if scenario == "auth/client-credentials-basic":
        return ClientCredentials(
            url, client_id=context["client_id"], client_secret=context["client_secret"]
        )
    if scenario == "auth/wif-jwt-bearer":
        return OAuthProvider(
            url, grant=JwtBearer(context["valid_jwt"]), client_id=context.get("client_id")
        )
    if scenario == "auth/enterprise-managed-authorization":
        grant = EnterpriseManaged(
            idp_token_endpoint=context["idp_token_endpoint"],
            id_token=context["idp_id_token"],
            idp_client_id=context.get("idp_client_id"),
        )
        return OAuthProvider(
            url,
            grant=grant,
            client_id=context["client_id"],
            client_secret=context["client_secret"],
        )
    return OAuthProvider(
        url,
        user_agent=auto_approve(),
        client_id=context.get("client_id"),
        client_secret=context.get("client_secret"),
        client_metadata_url="https://conformance-test.local/client-metadata.json",
        client_metadata=ClientMetadata(
            client_name="mcp-codegen conformance client",
            redirect_uris=("http://localhost:3000/callback",),
        ),
        dpop=scenario.startswith("auth/dpop"),
    )


async def use_skills(client: Client, load: bool) -> None:
    """List the server's skills (no file is read); with ``load``, load each one and read
    its files, each checked against its entry: a skill failing a check is not used."""
    skills = SkillsClient(client)
    for entry in await skills.list_skills():
        if not load:
            continue
        try:
            await skills.load(entry)
            for resource in entry.resources or ():
                if resource.uri != entry.uri:
                    await skills.read_file(entry, resource.uri)
        except SkillVerificationError as error:
            print(f"skill {entry.uri} not loaded: {error}", file=sys.stderr)


async def run(url: str, scenario: str, context: dict[str, Any]) -> None:
    """Connect to ``url`` and do what ``scenario`` asks (``context``: its data)."""
    auth = oauth_for(url, scenario, context)
    skills = scenario.startswith("sep-2640-client-")
    extensions: dict[str, dict[str, Any]] | None = {SKILLS_EXTENSION: {}} if skills else None
    async with connect_http(url, handlers=ConformanceHandlers(), auth=auth, extensions=extensions) as client:
        if skills:  # no-prefetch: list only; verify-*: load the skill, read its files
            await use_skills(client, load=scenario != "sep-2640-client-no-prefetch")
            return
        if "tools" not in client.session.peer_capabilities:
            return  # e.g. the initialize scenario: the handshake is the whole test
        tools = await client.list_tools()
        names = [tool.name for tool in tools.tools]
        if scenario == "tools_call":
            await client.call_tool(name="add_numbers", arguments={"a": 2, "b": 3})
        elif scenario == "elicitation-sep1034-client-defaults":
            await client.call_tool(name="test_client_elicitation_defaults", arguments={})
        elif scenario == "sse-retry":
            await client.call_tool(name="test_reconnection", arguments={})
        elif scenario == "json-schema-2020-12-preservation":
            focal = next(t for t in tools.tools if t.name == "json_schema_2020_12_tool")
            schema = wire(focal.input_schema)
            echo = next(name for name in names if name != focal.name)
            await client.call_tool(name=echo, arguments={"schema": schema})
        elif scenario == "http-custom-headers":
            for call in context.get("toolCalls", []):
                await client.call_tool(name=call["name"], arguments=call["arguments"])
        elif scenario in ("sep-2322-client-request-state", "http-standard-headers",
                          "http-invalid-tool-headers") or scenario.startswith("auth/"):
            await exercise(client, tools)


def main() -> int:
    """Run the scenario the harness names; exit 1 when authorization was refused."""
    if len(sys.argv) < 2:
        print("usage: conformance_client.py SERVER_URL", file=sys.stderr)
        return 2
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "initialize")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT", "{}") or "{}")
    try:
        asyncio.run(run(sys.argv[-1], scenario, context))
    except OAuthError as error:  # e.g. a mix-up or resource mismatch the client refused
        print(f"authorization failed: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
