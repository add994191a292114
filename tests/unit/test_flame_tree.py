"""build_tree when it must prune: elided frames keep every sample and the leaf it landed in, within the size caps."""

from __future__ import annotations

import json
from collections import Counter

from pmuprof.findings.diagnosis import Diagnosis
from pmuprof.report.flame import ELIDED_NAME, KIND_ELIDED, KIND_UNNAMED, build_tree


def _children(tree: dict, col: int = 0) -> list[list[int]]:
    kids: list[list[int]] = [[] for _ in tree["name"]]
    path: list[int] = []
    for i, d in enumerate(tree["depth"]):
        del path[d:]
        if path:
            kids[path[-1]].append(i)
        path.append(i)
    return kids


def _leaf_self(tree: dict, col: int = 0) -> Counter:
    """Self samples per frame name, read back from the preorder arrays (what the inverted view shows)."""
    kids = _children(tree)
    out: Counter = Counter()
    for i, values in enumerate(tree["values"][col]):
        own = values - sum(tree["values"][col][k] for k in kids[i])
        assert own >= 0, "a node is never smaller than its children"
        if own and tree["depth"][i]:
            out[tree["names"][tree["name"][i]]] += own
    return out


def _exact_self(tree: dict, col: int = 0) -> Counter:
    """Self per frame as the inverted view shows it: elided frames' own samples replaced by elided_self."""
    out = _leaf_self(tree, col)
    del out[ELIDED_NAME]
    extra = tree["elided_self"]
    for name, value in zip(extra["name"], extra["values"][col]):
        out[tree["names"][name]] += value
    return out


def _self(stacks: dict) -> Counter:
    out: Counter = Counter()
    for stack, count in stacks.items():
        if len(stack) > 1:
            out[stack[-1]] += count
    return out


def test_small_trees_are_not_pruned():
    tree = build_tree([{("p", "a", "b"): 2, ("p", "a"): 1}])
    assert tree["pruned"] == 0 and tree["elided"] == [0] and tree["elided_leafless"] == [0]
    assert ELIDED_NAME not in tree["names"]


def test_pruned_subtrees_keep_their_samples_and_leaves_under_elided_frames():
    # 300 narrow call paths from "a" down to ut_delay: too many nodes for the cap, yet ut_delay is 300 samples.
    stacks = {("p", "a", f"caller{i}", "mutex_enter", "ut_delay"): 1 for i in range(300)}
    stacks[("p", "a", "hot")] = 1000
    tree = build_tree([stacks], max_nodes=50)
    assert len(tree["name"]) <= 50 and tree["pruned"] == 900  # caller, mutex_enter, ut_delay × 300
    names = [tree["names"][i] for i in tree["name"]]
    assert names == ["p", "a", "hot", ELIDED_NAME, "ut_delay"]
    assert tree["depth"] == [0, 1, 2, 2, 3]
    assert tree["values"][0] == [1300, 1300, 1000, 300, 300]
    assert tree["kinds"][tree["names"].index(ELIDED_NAME)] == KIND_ELIDED
    assert tree["elided"] == [300] and tree["elided_leafless"] == [0]
    assert _leaf_self(tree) == _self(stacks)  # every function's self time survives the pruning


def test_leaves_too_scattered_to_show_stay_in_the_elided_frame():
    stacks = {("p", "a", f"caller{i}", f"leaf{i}"): 1 for i in range(300)}
    stacks[("p", "a", "hot")] = 1000
    tree = build_tree([stacks], max_nodes=50)
    assert tree["elided"] == [300] and tree["elided_leafless"] == [300]
    assert _leaf_self(tree) == Counter({"hot": 1000, ELIDED_NAME: 300})
    assert tree["values"][0][0] == 1300  # the root still counts everything
    # ... and each of those 300 samples is listed by the function it landed in.
    listed = {tree["names"][n]: v for n, v in zip(tree["elided_self"]["name"], tree["elided_self"]["values"][0])}
    assert listed == {f"leaf{i}": 1 for i in range(300)}
    assert _exact_self(tree) == _self(stacks)


def test_leaves_listed_by_name_are_bounded_and_the_rest_summed(monkeypatch):
    """Past MAX_HIDDEN_LEAVES leaf frames, the heaviest are listed and the rest summed under the elided frame's
    name (issue 34: 2 M distinct leaves listed them all, a 42 MB report): the total and the heaviest stay."""
    from pmuprof.report import flame

    monkeypatch.setattr(flame, "MAX_HIDDEN_LEAVES", 20)
    stacks = {("p", "a", f"caller{i:03d}", f"leaf{i:03d}"): 1 + (i % 7 == 0) * 5 for i in range(300)}
    stacks[("p", "a", "hot")] = 10_000
    tree = build_tree([stacks], max_nodes=50)
    extra = tree["elided_self"]
    listed = {tree["names"][n]: v for n, v in zip(extra["name"], extra["values"][0])}
    heavy = {f"leaf{i:03d}" for i in range(0, 300, 7)}  # 6 samples each: 43 of them
    assert len(listed) == 20 and set(listed) - {ELIDED_NAME} <= heavy and len(set(listed) & heavy) == 19
    assert sum(listed.values()) == tree["elided_leafless"][0] == sum(v for s, v in stacks.items() if s[-1] != "hot")
    assert listed[ELIDED_NAME] == tree["elided_leafless"][0] - 19 * 6
    assert sum(extra["nested"][0]) == 0 and tree["names"][extra["name"][-1]] == ELIDED_NAME


def test_recursive_leaves_under_their_own_kept_call_are_marked_nested():
    # Under each kept walk → mid{j}: one narrow path back into walk, three narrow paths to other leaves.
    stacks = {("p", "walk", f"mid{j}", f"s{j}", "walk"): 1 for j in range(5)}
    stacks.update({("p", "walk", f"mid{j}", f"t{j}{i}", f"u{j}{i}"): 1 for j in range(5) for i in range(3)})
    stacks[("p", "other", "x0", "walk")] = 1
    stacks[("p", "walk", "hot")] = 500
    stacks[("p", "other", "hot")] = 500
    tree = build_tree([stacks], max_nodes=20)
    extra = tree["elided_self"]
    listed = {
        tree["names"][n]: (v, nested) for n, v, nested in zip(extra["name"], extra["values"][0], extra["nested"][0])
    }
    assert listed.pop("walk") == (6, 5)  # 5 of them already sit under a kept "walk"
    assert listed == {f"u{j}{i}": (1, 0) for j in range(5) for i in range(3)}
    assert _exact_self(tree) == _self(stacks)


def test_a_real_frame_named_like_the_marker_keeps_its_kind():
    stacks = {("p", ELIDED_NAME): 5, **{("p", "a", f"c{i}", "x"): 1 for i in range(100)}, ("p", "a", "hot"): 500}
    tree = build_tree([stacks], max_nodes=20)
    kinds = [(tree["names"][i], tree["kinds"][i]) for i in range(len(tree["names"]))]
    assert (ELIDED_NAME, KIND_UNNAMED) in kinds and (ELIDED_NAME, KIND_ELIDED) in kinds


def test_byte_cap_holds_with_long_names():
    long = "std::__1::basic_string<char, std::__1::char_traits<char>, std::__1::allocator<char> >::"
    stacks = {("mysqld", f"{long}f{i}", f"{long}g{i % 7}"): 1 + i % 5 for i in range(2000)}
    stacks[("mysqld", "do_command", "ut_delay")] = 5000
    tree = build_tree([stacks], max_bytes=40_000)
    assert len(json.dumps(tree, ensure_ascii=False, separators=(",", ":"))) <= 40_000
    assert tree["pruned"] > 0 and tree["values"][0][0] == sum(stacks.values())
    assert _leaf_self(tree)["ut_delay"] == 5000
    assert _exact_self(tree) == _self(stacks)


def test_two_columns_prune_on_the_larger_share_and_stay_consistent():
    before = {("p", "a", f"c{i}", "spin"): 1 for i in range(200)}
    before[("p", "b")] = 800
    after = {("p", "a", f"c{i}", "spin"): 3 for i in range(200)}
    after[("p", "b")] = 100
    tree = build_tree([before, after], max_nodes=30)
    assert tree["totals"] == [1000, 700]
    for col, stacks in enumerate((before, after)):
        assert _leaf_self(tree, col) == _self(stacks) == _exact_self(tree, col)
        assert tree["values"][col][0] == tree["totals"][col]
    assert tree["elided"] == [200, 600]


def test_report_says_what_was_elided():
    from pmuprof.model.profile import Profile
    from pmuprof.report.html import render_report
    from pmuprof.report.payload import build_payload

    stacks = {("p", "a", f"caller{i}", "ut_delay"): 1 for i in range(300)}
    stacks[("p", "a", "hot")] = 700
    text = render_report(build_payload(Profile(stacks), Diagnosis(), 20))
    assert "600 frames narrower than 0.1000 %" in text and "(30.00 % of samples)" in text
    assert "self time per function is exact" in text
    assert "frames narrower than" not in render_report(build_payload(Profile(stacks), Diagnosis()))


def test_pruned_tree_is_the_same_whatever_the_input_order():
    stacks = {("p", f"a{i % 7}", f"c{i}", f"leaf{i % 13}"): 1 + i % 3 for i in range(400)}
    stacks[("p", "hot")] = 900
    one = build_tree([stacks], max_nodes=60)
    two = build_tree([dict(reversed(list(stacks.items())))], max_nodes=60)
    assert one["pruned"] > 0 and json.dumps(one) == json.dumps(two)


def test_each_stack_row_lands_in_its_node_or_its_callers_elided_frame():
    """build_tree_rows: the tree row every Stacks row's samples end in (what choosing some seconds
    redraws the graph with). A kept path's samples land on its last node, a pruned one's on the
    elided frame under its nearest kept caller; summed back per tree row they give the node's own
    samples (an elided frame: all it holds), on a tree pruned hard and on one not pruned."""
    import random

    from pmuprof.model.stacks import Stacks
    from pmuprof.report.flame import build_tree_rows

    rng = random.Random(11)
    stacks: dict = {}
    for _ in range(4000):
        stack = (rng.choice(["p", "q"]), *(f"f{rng.randint(0, 30)}" for _ in range(rng.randint(0, 9))))
        stacks[stack] = stacks.get(stack, 0) + rng.randint(1, 50)
    st = Stacks.of(stacks)
    for max_nodes in (200_000, 300, 40):
        tree, rows = build_tree_rows([st], max_nodes=max_nodes)
        assert (max_nodes == 200_000) == (tree["pruned"] == 0) and len(rows) == len(st) and (rows >= 0).all()
        kids, names = _children(tree), [tree["names"][i] for i in tree["name"]]
        path: list[int] = []
        parent, paths = [-1] * len(names), []
        for i, d in enumerate(tree["depth"]):
            del path[d:]
            parent[i] = path[-1] if path else -1
            path.append(i)
            paths.append(tuple(names[k] for k in path))
        landed = Counter()
        for (stack, count), row in zip(st.items(), rows.tolist()):
            landed[row] += count
            if names[row] == ELIDED_NAME:
                above = paths[parent[row]] if parent[row] >= 0 else ()
                assert stack[: len(above)] == above and len(stack) > len(above)
            else:
                assert paths[row] == stack
        values = tree["values"][0]
        for i, name in enumerate(names):
            under_elided = parent[i] >= 0 and names[parent[i]] == ELIDED_NAME
            want = (
                0 if under_elided else values[i] if name == ELIDED_NAME else values[i] - sum(values[k] for k in kids[i])
            )
            assert landed[i] == want, (max_nodes, i, name)


def test_the_cuts_partial_order_and_anchors_match_the_plain_definitions():
    """The cut orders only the widest nodes it can take: that prefix is the full stable order's
    (many ties at the boundary included); anchors by pointer jumping are each node's nearest kept
    caller-or-self, walked up one parent at a time."""
    import random

    import numpy as np

    from pmuprof.report.flametrie import Trie

    rng = random.Random(5)
    stacks: dict = {}
    for _ in range(3000):
        stack = ("p", *(f"f{rng.randint(0, 20)}" for _ in range(rng.randint(0, 10))))
        stacks[stack] = stacks.get(stack, 0) + rng.choice([1, 1, 1, 2, 7])
    trie = Trie.of([stacks])
    full = np.argsort(-trie.values[0], kind="stable")
    for limit in (1, 50, 777, trie.size - 1, trie.size + 5):
        assert np.array_equal(trie.widest_first(limit=limit)[:limit], full[:limit])
    kept = trie.values[0] >= 9
    parents = trie.parents.tolist()
    expect = []
    for i in range(trie.size):
        j = i
        while j >= 0 and not kept[j]:
            j = parents[j]
        expect.append(j)
    assert trie.anchors(kept).tolist() == expect
    kept = np.array([rng.random() < 0.5 for _ in range(trie.size)])  # not closed under callers: jumping
    assert trie.anchors(kept).tolist() == [
        next((a for a in _path(parents, i) if kept[a]), -1) for i in range(trie.size)
    ]


def _path(parents: list[int], i: int):
    while i >= 0:
        yield i
        i = parents[i]


def test_work_over_nodes_in_blocks_gives_the_same_tree(monkeypatch):
    """Own samples, narrowest children and the cut's widths are worked a block of nodes at a time:
    any block size gives the same pruned tree, one column or two, and the same arrays on the way."""
    import random

    import numpy as np

    from pmuprof.report import flamebuild, flametrie

    rng = random.Random(5)
    cols = [{}, {}]
    for _ in range(600):
        stack = ("p", *(f"f{rng.randint(0, 30)}" for _ in range(rng.randint(1, 7))))
        for col in cols:
            col[stack] = col.get(stack, 0) + rng.randint(0, 4)
    cols = [{s: c for s, c in col.items() if c} for col in cols]
    expect = [json.dumps(build_tree(cols[:1], max_nodes=120)), json.dumps(build_tree(cols, max_nodes=150))]
    tries = [flametrie.Trie.of(cols[:1]), flametrie.Trie.of(cols)]
    arrays = [(t.own(), t.narrowest_child(), t.wider_than(0.01), t.anchors(t.wider_than(0.01))) for t in tries]
    for block in (7, 1):
        for module in (flamebuild, flametrie):
            monkeypatch.setattr(module, "NODE_BLOCK", block)
        assert [json.dumps(build_tree(cols[:1], max_nodes=120)), json.dumps(build_tree(cols, max_nodes=150))] == expect
        for t, want in zip(tries, arrays):
            got = (t.own(), t.narrowest_child(), t.wider_than(0.01), t.anchors(t.wider_than(0.01)))
            assert all(np.array_equal(a, b) for a, b in zip(got, want))
    assert json.loads(expect[0])["pruned"] > 0 and json.loads(expect[1])["pruned"] > 0


def _cut_walk(trie, max_nodes: int, max_bytes: int) -> float:
    """The cut's plain definition: take nodes widest first, a heap of the taken nodes' narrowest-child
    widths telling how many keep all their children, until the nodes or bytes run out."""
    import heapq

    key, divisor = trie._width_key()
    narrowest = trie.narrowest_child(key)
    per_node = 6 + 4 * len(trie.totals)
    pending: list[float] = []
    whole = used = 0
    seen: set[int] = set()
    for rank, i in enumerate(trie.widest_first(key, max_nodes + 1).tolist()):
        w = float(key[i]) / divisor
        while pending and -pending[0] > w:
            heapq.heappop(pending)
            whole += 1
        elided = rank - whole
        if rank + elided >= max_nodes or used + elided * per_node > max_bytes:
            return w
        used += per_node
        if int(trie.frame[i]) not in seen:
            seen.add(int(trie.frame[i]))
            used += len(trie.frames[int(trie.frame[i])].encode("utf-8")) + 5
        heapq.heappush(pending, -(float(narrowest[i]) / divisor))
    return -1.0


def test_the_cut_worked_as_arrays_matches_the_walk_over_nodes():
    """Trie.cut counts elided nodes and name bytes with array operations; on random tries of one to three
    columns (ties, multi-byte names, budgets from nothing to everything) it stops where the walk does."""
    import random

    from pmuprof.report.flametrie import Trie

    rng = random.Random(11)
    for _ in range(60):
        names = [f"f{k}" + "é" * rng.randint(0, 2) for k in range(rng.choice([3, 12, 80]))]
        cols = []
        for _ in range(rng.choice([1, 1, 2, 3])):
            col: dict = {}
            for _ in range(rng.randint(1, 200)):
                stack = ("p", *(rng.choice(names) for _ in range(rng.randint(0, 7))))
                col[stack] = col.get(stack, 0) + rng.choice([1, 1, 2, 5, 100])
            cols.append(col)
        trie = Trie.of(cols)
        for max_nodes in (0, 1, 3, 20, 150, 10**6):
            for max_bytes in (0, 50, 800, 10**4, 10**9):
                assert trie.cut(max_nodes, max_bytes) == _cut_walk(trie, max_nodes, max_bytes)


def test_rows_sorted_by_name_give_the_trie_the_level_build_gives():
    """Trie.of reads rows sorted by name in one pass (each row's nodes past the prefix it shares with
    the row before); unsorted rows are built level by level. Both give the same trie, array for array."""
    import random

    import numpy as np

    from pmuprof.model.stacks import Stacks
    from pmuprof.report.flamebuild import _build, _shared_prefixes
    from pmuprof.report.flametrie import Trie

    rng = random.Random(11)
    read_sorted = 0
    for _ in range(400):
        names = [rng.choice("abcdefgh") * rng.randint(1, 2) for _ in range(rng.randint(1, 8))]
        stacks: dict = {}
        for _ in range(rng.randint(1, 40)):
            stack = (rng.choice(["p1", "p2"]), *(rng.choice(names) for _ in range(rng.randint(0, 6))))
            stacks[stack] = stacks.get(stack, 0) + rng.randint(1, 9)
        st = Stacks.of(dict(sorted(stacks.items())) if rng.random() < 0.7 else stacks)
        frames = tuple(sorted(st.frames))
        rank = np.array([frames.index(f) for f in st.frames], dtype=np.int64)
        read_sorted += _shared_prefixes(st, rank) is not None
        got = Trie.of([st])
        want = _build(frames, st.ids, st.lengths, st.counts, np.zeros(len(st.counts), np.int8), 1, [st.total], rank)
        for field in ("frame", "depths", "parents", "values", "end", "row_node"):
            a, b = getattr(got, field), getattr(want, field)
            assert a.dtype == b.dtype and np.array_equal(a, b), field
        assert got.frames == want.frames and got.totals == want.totals
    assert 200 < read_sorted < 400  # both ways were taken
