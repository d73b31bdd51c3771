"""A buyer that negotiates through MCP tools (`pip install mcp`): dealgym serve's `/mcp` lists
the tools — make_offer, accept, reject, walk_away, say, with the scenario's own terms — and
each call is one turn. The buyer reads its structured state (its budget, the offer on the
table, the moves legal now) and concedes toward its budget until the seller's price is one it
takes.

    python3 examples/python/mcp_learner.py --server http://127.0.0.1:8100 --episodes 3

Exits non-zero unless every episode ends in a deal, so CI can run it as a check.
"""
import argparse
import asyncio
import sys

from mcp import Client


def text_of(result):
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def negotiate(client, seed):
    started = await client.call_tool("start_negotiation", {"family": "ahp", "seed": seed})
    answer = started.structured_content
    tools = {t.name: t for t in (await client.list_tools()).tools}
    terms = tools["make_offer"].input_schema["properties"]["terms"]["required"]
    assert terms == ["price"], f"an AHP deal is a price, the tools say {terms}"
    budget = answer["observation"]["state"]["own"]["budget"]
    offer = round(0.55 * budget, 2)
    while not answer["done"]:
        state = answer["observation"]["state"]
        standing = state["standing_offer"]
        if "accept" in state["legal_actions"] and standing["terms"]["price"] <= 0.97 * budget:
            result = await client.call_tool("accept", {"message": "Deal."})
        else:
            result = await client.call_tool(
                "make_offer", {"terms": {"price": offer}, "message": f"I can pay ${offer}."}
            )
            offer = round(min(0.97 * budget, offer + 0.1 * budget), 2)
        if result.is_error:
            raise SystemExit(f"episode {seed}: the server refused a move: {text_of(result)}")
        answer = result.structured_content
    outcome = answer["observation"]["info"]["outcome"]
    return outcome["kind"], answer["reward"]


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", default="http://127.0.0.1:8100")
    parser.add_argument("--episodes", type=int, default=3)
    args = parser.parse_args()
    async with Client(f"{args.server}/mcp") as client:
        names = [t.name for t in (await client.list_tools()).tools]
        print("tools:", ", ".join(names))
        deals = 0
        for seed in range(args.episodes):
            kind, reward = await negotiate(client, seed)
            deals += kind == "deal"
            print(f"episode {seed}: {kind}, reward {reward}")
    if deals < args.episodes:
        sys.exit(f"{args.episodes - deals} of {args.episodes} episodes ended without a deal")


if __name__ == "__main__":
    asyncio.run(main())
