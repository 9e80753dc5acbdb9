#!/usr/bin/env python3
"""Held-out TravelPlanner-style evaluation set, built from the database tables only.

Usage:  python make_set.py --database <TravelPlanner database dir> [--out DIR]

Writes reader_requests.jsonl, trips.jsonl and trips_reference.jsonl (default: beside this file).
Deterministic: stdlib only, one random.Random(2026), no iteration over unordered sets.
"""

import argparse
import csv
import datetime as dt
import json
import math
import random
import re
from collections import defaultdict
from pathlib import Path

CUISINES = ["Chinese", "American", "Italian", "Mexican", "Indian", "Mediterranean", "French"]
HOUSE = ["parties", "smoking", "children under 10", "visitors", "pets"]
ROOMS = ["entire room", "private room", "shared room", "not shared room"]
TRANSPORT = ["no flight", "no self-driving"]
FIRST, LAST = dt.date(2022, 3, 1), dt.date(2022, 3, 30)  # flights table covers 2022-03-01..03-30


# ----------------------------------------------------------------------------- data
class DB:
    def __init__(self, d: Path):
        def rows(name):
            with open(d / name, newline="", encoding="utf-8") as f:
                return list(csv.DictReader(f))

        self.att, self.res = rows("attractions.csv"), rows("clean_restaurant_2022.csv")
        # the reference infos drop accommodation rows with any empty field (e.g. no house rules)
        self.acc = [
            r for r in rows("clean_accommodations_2022.csv") if all(v.strip() for v in r.values())
        ]
        self.fl = rows("flights_from_reference_info.csv")
        self.dist = {}
        for r in rows("distance.csv"):
            self.dist.setdefault((r["origin"], r["destination"]), r)  # first row wins on duplicates
        text = (d / "citySet_with_states.txt").read_text(encoding="utf-8")
        self.state = dict(line.split("\t") for line in text.split("\n") if line.strip())
        self.cities = sorted(self.state)
        has_att = {r["City"] for r in self.att}
        self.dests = [c for c in self.cities if c in has_att]  # a stay day needs an attraction
        by_state = defaultdict(list)
        for c in self.dests:
            by_state[self.state[c]].append(c)
        self.states = {
            s: sorted(v) for s, v in sorted(by_state.items()) if len(v) >= 3 and s != "England"
        }

    def ground(self, o, d):
        r = self.dist.get((o, d))
        if not r or not r["duration"] or "day" in r["duration"]:
            return None
        h = re.search(r"(\d+) hour", r["duration"])
        m = re.search(r"(\d+) min", r["duration"])
        km = float(r["distance"].replace(",", "").replace(" km", ""))
        return {
            "duration": r["duration"],
            "duration_min": (int(h.group(1)) if h else 0) * 60 + (int(m.group(1)) if m else 0),
            "distance": r["distance"],
            "distance_km": km,
        }

    def flights(self, o, d, date):
        f = [
            r
            for r in self.fl
            if r["OriginCityName"] == o and r["DestCityName"] == d and r["FlightDate"] == date
        ]
        return sorted(f, key=lambda r: r["Flight Number"])

    def accs(self, c):
        return [
            {
                "name": r["NAME"],
                "price": float(r["price"]),
                "room_type": r["room type"],
                "house_rules": r["house_rules"].split(" & "),
                "minimum_nights": float(r["minimum nights"]),
                "maximum_occupancy": int(r["maximum occupancy"]),
                "review_rate": float(r["review rate number"]),
                "city": c,
            }
            for r in self.acc
            if r["city"] == c
        ]

    def rests(self, c):
        return [
            {
                "name": r["Name"],
                "average_cost": int(r["Average Cost"]),
                "cuisines": r["Cuisines"].split(", "),
                "rating": float(r["Aggregate Rating"]),
                "city": c,
            }
            for r in self.res
            if r["City"] == c
        ]

    def atts(self, c):
        return [
            {
                "name": r["Name"],
                "latitude": float(r["Latitude"]),
                "longitude": float(r["Longitude"]),
                "address": r["Address"],
                "phone": r["Phone"],
                "website": r["Website"],
                "city": c,
            }
            for r in self.att
            if r["City"] == c
        ]

    def reference(self, idx, org, cities, leg_dates):
        """Reference info in the layout of reference_info.jsonl; legs org->c1->...->org."""
        stops = [org, *cities, org]
        legs = list(zip(stops, stops[1:], leg_dates))
        ref = {
            "idx": idx,
            "cities": list(cities),
            "attractions": [],
            "restaurants": [],
            "accommodations": [],
            "flight_searches": [],
            "flights": [],
            "ground_transport": [],
        }
        for c in cities:
            ref["attractions"] += self.atts(c)
            ref["restaurants"] += self.rests(c)
            ref["accommodations"] += self.accs(c)
        for o, d, date in legs:
            f = self.flights(o, d, date)
            ref["flight_searches"].append({"origin": o, "dest": d, "date": date, "found": len(f)})
            ref["flights"] += [
                {
                    "number": r["Flight Number"],
                    "price": int(r["Price"]),
                    "dep_time": r["DepTime"],
                    "arr_time": r["ArrTime"],
                    "duration": r["ActualElapsedTime"],
                    "date": r["FlightDate"],
                    "origin": o,
                    "dest": d,
                    "distance_miles": float(r["Distance"]),
                }
                for r in f
            ]
            g = self.ground(o, d)
            for mode in ("self-driving", "taxi"):
                if g is None:
                    ref["ground_transport"].append(
                        {
                            "mode": mode,
                            "origin": o,
                            "dest": d,
                            "available": False,
                            "duration": None,
                            "duration_min": None,
                            "distance": None,
                            "distance_km": None,
                            "cost": None,
                            "text": "No valid information.",
                        }
                    )
                    continue
                cost = int(g["distance_km"] * (0.05 if mode == "self-driving" else 1))
                ref["ground_transport"].append(
                    {
                        "mode": mode,
                        "origin": o,
                        "dest": d,
                        "available": True,
                        **g,
                        "cost": cost,
                        "text": f"{mode}, from {o} to {d}, duration: {g['duration']}, "
                        f"distance: {g['distance']}, cost: {cost}",
                    }
                )
        return ref


# --------------------------------------------------------------------------- costing (3-day trips)
def ok_acc(a, lc, nights=2):
    rt, hr = lc["room type"], lc["house rule"]
    want = {
        "entire room": "Entire home/apt",
        "private room": "Private room",
        "shared room": "Shared room",
    }
    if rt in want and a["room_type"] != want[rt]:
        return False
    if rt == "not shared room" and a["room_type"] == "Shared room":
        return False
    if hr and "No " + hr in a["house_rules"]:
        return False
    return a["minimum_nights"] <= nights


def costs(ref, q):
    """(cheapest concrete plan cost, hard lower bound) or (None, None) if no plan can exist."""
    p, lc = q["people_number"], q["local_constraint"]
    org, dest = q["org"], q["dest"]
    gt = {(g["mode"], g["origin"]): g["cost"] for g in ref["ground_transport"] if g["available"]}
    fl = defaultdict(lambda: None)
    for f in ref["flights"]:
        k = f["origin"]
        fl[k] = f["price"] * p if fl[k] is None else min(fl[k], f["price"] * p)
    opts = {o: [] for o in (org, dest)}  # per leg: (kind, cost)
    for o in (org, dest):
        if lc["transportation"] != "no flight" and fl[o] is not None:
            opts[o].append(("flight", fl[o]))
        if ("taxi", o) in gt:
            opts[o].append(("taxi", gt[("taxi", o)] * math.ceil(p / 4)))
        if lc["transportation"] != "no self-driving" and ("self-driving", o) in gt:
            opts[o].append(("self", gt[("self-driving", o)] * math.ceil(p / 5)))
    pairs = [
        a[1] + b[1] for a in opts[org] for b in opts[dest] if (a[0] == "self") == (b[0] == "self")
    ]
    accs = [
        a["price"] * math.ceil(p / a["maximum_occupancy"]) * 2
        for a in ref["accommodations"]
        if ok_acc(a, lc)
    ]
    rs = sorted(ref["restaurants"], key=lambda r: (r["average_cost"], r["name"]))
    if not pairs or not accs or len(rs) < 9 or not ref["attractions"]:
        return None, None
    chosen = []
    for c in lc["cuisine"] or []:
        if any(c in r["cuisines"] for r in chosen):
            continue
        hit = [r for r in rs if c in r["cuisines"] and r not in chosen]
        if not hit:
            return None, None
        chosen.append(hit[0])
    chosen += [r for r in rs if r not in chosen][: max(0, 9 - len(chosen))]
    plan = min(pairs) + min(accs) + sum(r["average_cost"] for r in chosen) * p
    lb = (
        min(pairs) + min(accs) + sum(r["average_cost"] for r in rs[:3]) * p
    )  # only day 2 needs 3 meals
    return plan, lb


# ----------------------------------------------------------------------------- phrasing
ONES = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
TENS = ["_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def words(n):
    if n < 20:
        return ONES[n]
    if n < 100:
        return TENS[n // 10] + ("-" + ONES[n % 10] if n % 10 else "")
    if n < 1000:
        return ONES[n // 100] + " hundred" + (" " + words(n % 100) if n % 100 else "")
    return words(n // 1000) + " thousand" + (" " + words(n % 1000) if n % 1000 else "")


def ordn(d):
    return f"{d}{'th' if 10 <= d % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(d % 10, 'th')}"


def say_dates(R, dates):
    a, b = dt.date.fromisoformat(dates[0]), dt.date.fromisoformat(dates[-1])
    n = len(dates)
    forms = [
        f"{a.month}/{a.day}/{a.year} to {b.month}/{b.day}/{b.year}",
        f"leaving {a.month}/{a.day}/2022 and coming back {b.month}/{b.day}/2022",
        f"March {a.day}-{b.day}, 2022",
        f"March {ordn(a.day)} to March {ordn(b.day)}, 2022",
        f"{a.day} March 2022 to {b.day} March",
        f"from the {ordn(a.day)} to the {ordn(b.day)} of March 2022",
        f"Mar {ordn(a.day)}\u2013{ordn(b.day)} '22",
        f"{a.isoformat()} through {b.isoformat()}",
        f"starting {a.strftime('%A')}, March {a.day}, 2022, for {words(n)} days",
        f"departing March {a.day} 2022 and staying {words(n - 1)} nights",
        f"Mar {a.day} - Mar {b.day} 2022",
    ]
    if n == 7:
        forms.append(f"for a week starting March {ordn(a.day)}, 2022")
    i = R.randrange(len(forms))
    return forms[i], f"date{i}"


def say_people(R, n, hr):
    if hr == "children under 10" and n >= 2:
        kid = R.choice([4, 5, 6, 7, 8, 9])
        forms = {
            2: [f"me and my {kid}-year-old", f"my daughter ({kid}) and I"],
            3: [f"my husband, me and our {kid}-year-old", "two adults and a toddler"],
        }.get(n, [])
        forms += [
            f"a group of {n} including two young kids",
            f"{n} of us, kids included (the youngest is {kid})",
        ]
        return R.choice(forms), True
    table = {
        1: [
            "a solo traveler",
            "just me",
            "a single traveler",
            "one person",
            "myself, travelling alone",
        ],
        2: [
            "me and my wife",
            "my partner and I",
            "2 adults",
            "a couple",
            "the two of us",
            "two friends",
        ],
        3: ["a family of three", "three friends", "3 people", "me and two coworkers"],
        4: ["four friends", "a group of 4", "me plus three colleagues", "two couples"],
        5: ["a group of 5", "five of us", "5 adults"],
        6: ["a party of six", "six friends", "6 people"],
        7: ["a party of 7", "seven of us", "a group of seven adults"],
        8: ["eight coworkers", "a group of 8", "eight people"],
    }
    return R.choice(table[n]), False


def say_budget(R, b):
    forms = [
        f"${b:,}",
        f"{b:,} dollars",
        f"a budget of {b} USD",
        f"keep everything under ${b:,}",
        f"{words(b)} dollars",
        f"up to ${b}",
        f"around ${b:,} all in",
    ]
    if b % 100 == 0 and b >= 1000:
        forms.append(f"${b / 1000:g}k")
    return R.choice(forms)


HR_TXT = {
    "pets": [
        "our dog comes along",
        "we're bringing our cat",
        "we need a pet-friendly place",
        "we travel with two small dogs",
    ],
    "children under 10": [
        "the place has to accept children under 10",
        "we'll be bringing our kids, so no 'no children' rentals",
    ],
    "parties": [
        "we want to throw a small party at the rental",
        "we're celebrating a birthday and want to host a party where we stay",
        "the place must allow parties",
    ],
    "smoking": [
        "I smoke, so the place must allow smoking",
        "a couple of us smoke, so smoking has to be allowed",
        "we need somewhere smoking is permitted",
    ],
    "visitors": [
        "friends will visit us at the place",
        "local friends will drop by, so visitors must be allowed",
        "we need a rental that allows visitors",
    ],
}
RT_TXT = {
    "not shared room": [
        "not shared",
        "we don't want to share a room with strangers",
        "no shared rooms please",
    ],
    "private room": ["a private room", "private rooms are what we want", "book private rooms"],
    "entire room": [
        "the whole place to ourselves",
        "an entire home or apartment",
        "entire place only",
    ],
    "shared room": [
        "we want a shared room to save money",
        "book a shared room, hostel-style",
        "shared rooms only",
    ],
}
TR_TXT = {
    "no flight": [
        "no flights",
        "I don't fly",
        "we'd rather not fly",
        "ground travel only, no planes",
    ],
    "no self-driving": [
        "no self-driving",
        "we won't drive",
        "none of us will drive, so no self-driving",
    ],
}


def say_cuisine(R, cs):
    j = ", ".join(cs[:-1]) + " and " + cs[-1]
    return R.choice(
        [
            f"we love {j} food",
            f"we'd like to eat {j}",
            f"please include {j} restaurants",
            f"foodies here - {j} cuisine for sure",
        ]
    )


def compose(R, q):
    """Natural-language request from the gold fields, with heavily varied wording and order."""
    lc, style = q["local_constraint"], []
    dates, ds = say_dates(R, q["date"])
    style.append(ds)
    who, kids = say_people(R, q["people_number"], lc["house rule"])
    n = q["visiting_city_number"]
    if q["days"] == 3:
        where = R.choice(
            [
                f"from {q['org']} to {q['dest']}",
                f"{q['org']} -> {q['dest']}",
                f"visiting {q['dest']}, starting from {q['org']}",
                f"out of {q['org']} to {q['dest']}",
            ]
        )
    else:
        k = R.choice([str(n), words(n)])
        where = R.choice(
            [
                f"from {q['org']}, visiting {k} cities in {q['dest']}",
                f"out of {q['org']} to see {k} different {q['dest']} cities",
                f"starting in {q['org']} and touring {k} cities across {q['dest']}",
            ]
        )
    span = R.choice([f"{q['days']}-day trip", f"{words(q['days'])} day trip", "trip"])
    head = R.choice(
        [
            f"Plan a {span} {where}, {dates}, for {who}.",
            f"{who[0].upper() + who[1:]} - {span} {where}, {dates}.",
            f"Need a {span} {where}. Dates: {dates}. Travellers: {who}.",
            f"Can you put together a {span} {where} for {who}? {dates[0].upper() + dates[1:]}.",
        ]
    )
    extra = [
        R.choice(["Budget: ", "Money-wise, ", "Total spend: ", "We have "])
        + say_budget(R, q["budget"])
        + "."
    ]
    if lc["house rule"] and not (
        kids and lc["house rule"] == "children under 10" and R.random() < 0.6
    ):
        extra.append(R.choice(HR_TXT[lc["house rule"]]) + ".")
    if lc["room type"]:
        extra.append(
            R.choice(["Accommodation: ", "Lodging - ", "For the stay, "])
            + R.choice(RT_TXT[lc["room type"]])
            + "."
        )
    if lc["cuisine"]:
        extra.append(say_cuisine(R, lc["cuisine"]) + ".")
    if lc["transportation"]:
        extra.append(R.choice(TR_TXT[lc["transportation"]]) + ".")
    R.shuffle(extra)
    parts = [head] + [e[0].upper() + e[1:] for e in extra]
    if R.random() < 0.3:
        parts = parts[1:2] + parts[:1] + parts[2:]
    return " ".join(parts), style


def level(p, lc):
    k = sum(v is not None for v in lc.values())
    return "easy" if k == 0 else ("medium" if k == 1 else "hard")


def rand_lc(R, lvl, allow_shared=True):
    lc = {"house rule": None, "cuisine": None, "room type": None, "transportation": None}
    if lvl == "medium":
        k = R.choice(["house rule", "cuisine", "room type"])
        keys, nc = [k], 2
    elif lvl == "hard":
        keys, nc = R.sample(["house rule", "cuisine", "room type", "transportation"], 3), 4
    else:
        return lc
    for k in keys:
        if k == "house rule":
            lc[k] = R.choice(HOUSE)
        if k == "cuisine":
            lc[k] = R.sample(CUISINES, nc)
        if k == "room type":
            lc[k] = R.choice(ROOMS if allow_shared else ROOMS[:2] + ROOMS[3:])
        if k == "transportation":
            lc[k] = R.choice(TRANSPORT)
    return lc


def dates_from(start, n):
    return [(start + dt.timedelta(days=i)).isoformat() for i in range(n)]


def rand_start(R, n):
    return FIRST + dt.timedelta(days=R.randrange((LAST - FIRST).days - n + 2))


def make_query(R, idx, org, dest, days, ncity, dates, p, lc, budget):
    q = {
        "idx": idx,
        "query": "",
        "org": org,
        "dest": dest,
        "days": days,
        "visiting_city_number": ncity,
        "date": dates,
        "people_number": p,
        "local_constraint": lc,
        "budget": budget,
        "level": level(p, lc),
    }
    q["query"], q["style"] = compose(R, q)
    return q


# ----------------------------------------------------------------------------- sets
def reader_requests(R, db, n=150):
    out = []
    for i in range(n):
        days = R.choice([3, 3, 5, 7])
        lvl = R.choice(["easy", "medium", "hard"])
        p = 1 if lvl == "easy" else R.randint(2, 8)
        lc = rand_lc(R, lvl)
        if days == 3:
            dest = R.choice(db.dests)
            org = R.choice([c for c in db.cities if c != dest])
            ncity = 1
        else:
            ncity = 2 if days == 5 else 3
            dest = R.choice(sorted(db.states))
            org = R.choice([c for c in db.cities if db.state[c] != dest])
        dates = dates_from(rand_start(R, days), days)
        budget = R.randrange(6, 40) * 100 * (days // 2) + (
            R.choice([0, 0, 50]) if R.random() < 0.2 else 0
        )
        budget = budget * max(1, p // 2)
        out.append(make_query(R, i, org, dest, days, ncity, dates, p, lc, budget))
    return out


def trips(R, db, n_feasible=20):
    out, refs, used = [], [], set()
    dbl = {
        a["city"]
        for c in db.dests
        for a in db.accs(c)
        if "  " in a["name"] or any(ord(ch) > 127 for ch in a["name"])
    }
    odd = sorted(c for c in db.dests if c in dbl)
    # flight-based candidates: outbound flight on d, return flight (or taxi) on d+2
    fl_pairs = []
    for f in sorted(db.fl, key=lambda r: (r["FlightDate"], r["OriginCityName"], r["DestCityName"])):
        o, d, day = f["OriginCityName"], f["DestCityName"], dt.date.fromisoformat(f["FlightDate"])
        back = (day + dt.timedelta(days=2)).isoformat()
        if (
            d in db.dests
            and o in db.state
            and (db.flights(d, o, back) or db.ground(d, o))
            and (o, d, day) not in fl_pairs
        ):
            fl_pairs.append((o, d, day))
    R.shuffle(fl_pairs)

    def add(org, dest, start, p, lc, feasible, why, budget_fn):
        idx = len(out)
        dates = dates_from(start, 3)
        ref = db.reference(idx, org, [dest], [dates[0], dates[-1]])
        q = {"org": org, "dest": dest, "people_number": p, "local_constraint": lc}
        plan, lb = costs(ref, q)
        budget = budget_fn(plan, lb)
        if budget is None:
            return False
        t = make_query(R, idx, org, dest, 3, 1, dates, p, lc, budget)
        t.update(
            {"feasible": feasible, "why": why, "cheapest_plan_cost": plan, "lower_bound_cost": lb}
        )
        out.append(t)
        refs.append(ref)
        used.add((org, dest))
        return True

    def generous(plan, lb):
        if plan is None:
            return None
        b = int(math.ceil(plan * R.uniform(1.4, 2.1) / 100) * 100)
        assert b >= 1.3 * plan
        return b

    tries = 0
    while len(out) < n_feasible and tries < 5000:
        tries += 1
        lvl = R.choice(["easy", "medium", "hard", "hard"])
        p = 1 if lvl == "easy" else R.randint(2, 6)
        lc = rand_lc(R, lvl, allow_shared=p <= 2)
        if len(out) % 3 == 0 and fl_pairs:
            org, dest, start = fl_pairs.pop()
        else:
            dest = R.choice(odd) if R.random() < 0.8 else R.choice(db.dests)
            orgs = [c for c in db.cities if c != dest and db.ground(c, dest) and db.ground(dest, c)]
            if not orgs:
                continue
            org, start = R.choice(orgs), rand_start(R, 3)
        if (org, dest) in used:
            continue
        add(org, dest, start, p, lc, True, None, generous)

    # --- impossible by construction
    def never(plan, lb):  # budget far below the hard lower bound
        return None if lb is None else max(100, int(lb * 0.45) // 100 * 100)

    while True:  # 1) budget far too small
        dest = R.choice(odd)
        orgs = [c for c in db.cities if c != dest and db.ground(c, dest) and db.ground(dest, c)]
        if orgs and add(
            R.choice(orgs),
            dest,
            rand_start(R, 3),
            R.randint(3, 5),
            rand_lc(R, "medium", False),
            False,
            "budget is under half of the cheapest possible transport + 2 nights + 3 meals",
            never,
        ):
            break
    while (
        True
    ):  # 2) shared room required where the city has no shared room with minimum nights <= 2
        dest = R.choice(db.dests)
        if any(a["room_type"] == "Shared room" and a["minimum_nights"] <= 2 for a in db.accs(dest)):
            continue
        orgs = [c for c in db.cities if c != dest and db.ground(c, dest) and db.ground(dest, c)]
        lc = {
            "house rule": R.choice(HOUSE),
            "cuisine": None,
            "room type": "shared room",
            "transportation": "no flight",
        }
        if orgs and add(
            R.choice(orgs),
            dest,
            rand_start(R, 3),
            2,
            lc,
            False,
            f"no accommodation in {dest} is a shared room with minimum nights <= 2",
            lambda a, b: R.randrange(30, 60) * 100,
        ):
            break
    for o, d, day in sorted(fl_pairs):  # 3) "no flight" but the only way there is by air
        if db.ground(o, d) is None and db.flights(d, o, (day + dt.timedelta(days=2)).isoformat()):
            lc = {
                "house rule": None,
                "cuisine": R.sample(CUISINES, 4),
                "room type": "not shared room",
                "transportation": "no flight",
            }
            if add(
                o,
                d,
                day,
                2,
                lc,
                False,
                f"no ground route between {o} and {d}"
                " (distance.csv has none or it takes over a day)",
                lambda a, b: R.randrange(40, 80) * 100,
            ):
                break
    while True:  # 4) no flights on those dates and no ground route at all
        org, dest = R.choice(db.cities), R.choice(db.dests)
        start = rand_start(R, 3)
        ds = dates_from(start, 3)
        if (
            org == dest
            or db.ground(org, dest)
            or db.ground(dest, org)
            or db.flights(org, dest, ds[0])
            or db.flights(dest, org, ds[-1])
        ):
            continue
        if add(
            org,
            dest,
            start,
            1,
            {"house rule": None, "cuisine": None, "room type": None, "transportation": None},
            False,
            f"no flight {org}->{dest} on {ds[0]} or back on {ds[-1]}, and no ground route",
            lambda a, b: R.randrange(15, 40) * 100,
        ):
            break
    for t in out:  # infeasible ones must really be infeasible
        if not t["feasible"]:
            assert t["cheapest_plan_cost"] is None or t["budget"] < t["lower_bound_cost"], t
    return out, refs, len(odd)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--database", required=True, type=Path, help="TravelPlanner database/ directory (the CSVs)"
    )
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    ap.add_argument(
        "--check-against", type=Path, help="reference_info.jsonl: rebuild its records and compare"
    )
    a = ap.parse_args()
    R, db = random.Random(2026), DB(a.database)
    if a.check_against:  # validates the reference builder against the benchmark's own records
        for line in a.check_against.read_text(encoding="utf-8").splitlines():
            ref = json.loads(line)
            fs = ref["flight_searches"]
            mine = db.reference(ref["idx"], fs[0]["origin"], ref["cities"], [f["date"] for f in fs])
            assert mine == ref, f"reference {ref['idx']} differs"
        print("reference builder reproduces", a.check_against.name)
    req = reader_requests(R, db)
    tr, refs, n_odd = trips(R, db)
    a.out.mkdir(parents=True, exist_ok=True)
    for name, rows in (
        ("reader_requests.jsonl", req),
        ("trips.jsonl", tr),
        ("trips_reference.jsonl", refs),
    ):
        with open(a.out / name, "w", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(
        f"{len(req)} requests, {len(tr)} trips ({sum(t['feasible'] for t in tr)} feasible), "
        f"{n_odd} destination cities with double-space/non-ASCII accommodation names"
    )


if __name__ == "__main__":
    main()
