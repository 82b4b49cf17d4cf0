"""AutoMIL: the classifier an inner CV chooses, as `mil cv --classifier auto` chooses it,
over the default candidates or scikit-learn parameter grids."""

import numpy as np
import pytest

import miltk
from conftest import run_mil


def test_nested_cv_equals_the_command_line(musk1):
    bags, y, _ = musk1
    report = miltk.cross_validate_native(miltk.AutoMIL(random_state=3), bags, y, cv=miltk.StratifiedBagKFold(4, 3))
    cli = run_mil("cv", "musk1", "--classifier", "auto", "--folds", "4", "--seed", "3")
    if cli is None:
        pytest.skip("the mil program is not built")
    assert report["accuracy"] == cli["accuracy"]
    assert report["chosen"] == [c["classifier"] for c in cli["chosen"]]


def test_parameter_grids_expand_to_every_point(musk1):
    bags, y, _ = musk1
    auto = miltk.AutoMIL(
        [
            (miltk.MILR(), {"pooling": ["mean", "max"], "ridge": [1.0, 10.0]}),
            miltk.SimpleMI(ridge=1.0),
        ]
    ).fit(bags, y)
    assert auto.n_candidates_ == 5
    expected = [f"milr ({p} pooling, ridge {r})" for p in ("mean", "max") for r in (1, 10)]
    expected.append("simple-mi (mean summary, ridge 1)")
    assert auto.chosen_ in expected
    # Every candidate's inner score, best first, the chosen one at the top.
    names = [name for name, _ in auto.inner_scores_]
    scores = [score for _, score in auto.inner_scores_]
    assert sorted(names) == sorted(expected) and names[0] == auto.chosen_
    assert all(0.5 < s <= 1 for s in scores) and scores == sorted(scores, reverse=True)
    # The fitted model is the chosen candidate fitted on every bag.
    chosen = expected.index(auto.chosen_)
    if chosen < 4:
        alone = miltk.MILR(pooling=("mean", "max")[chosen // 2], ridge=(1.0, 10.0)[chosen % 2])
    else:
        alone = miltk.SimpleMI(ridge=1.0)
    alone.fit(bags, y)
    assert np.array_equal(auto.predict(bags), alone.predict(bags))


def test_a_repeated_inner_cv_ranks_as_the_command_line(musk1, tmp_path):
    bags, y, _ = musk1
    grid = [(miltk.MILR(), {"pooling": ["mean", "max", "noisy-or"]})]
    auto = miltk.AutoMIL(grid, select="accuracy", inner_repeats=3).fit(bags, y)
    once = miltk.AutoMIL(grid, select="accuracy").fit(bags, y)
    assert auto.inner_scores_ != once.inner_scores_
    cli = run_mil(
        "train", "musk1", "--classifier", "milr", "--pooling", "mean,max,noisy-or",
        "--inner-repeats", "3", "-o", str(tmp_path / "model.json"),
    )
    if cli is None:
        pytest.skip("the mil program is not built")
    assert auto.inner_scores_ == [(s["candidate"], s["score"]) for s in cli["chosen"]["inner"]]
    with pytest.raises(ValueError, match="inner_repeats"):
        miltk.AutoMIL(grid, inner_repeats=0).fit(bags, y)


def test_bad_candidates_are_refused(musk1):
    bags, y, _ = musk1
    with pytest.raises(TypeError, match="miltk classifier"):
        miltk.AutoMIL([miltk.PCA(n_components=2)]).fit(bags, y)
    with pytest.raises(ValueError, match="empty"):
        miltk.AutoMIL([]).fit(bags, y)
    with pytest.raises(ValueError, match="select"):
        miltk.AutoMIL(select="f1").fit(bags, y)


def test_a_cpu_budget_leaves_out_the_dearest_candidates(musk1):
    bags, y, _ = musk1
    candidates = [miltk.SimpleMI(), miltk.AttentionMIL(epochs=20)]
    # Without a budget nothing is estimated or left out.
    free = miltk.AutoMIL(candidates).fit(bags, y)
    assert free.cpu_estimate_ is None and free.left_out_ == []
    # The attention network's 20 epochs cost orders of magnitude more than SimpleMI's
    # mean summary: a budget of a few hundredths of a second keeps SimpleMI alone.
    tight = miltk.AutoMIL(candidates, max_cpu_minutes=0.001).fit(bags, y)
    assert tight.left_out_ and tight.left_out_[0].startswith("attention")
    assert tight.n_candidates_ == 1 and tight.chosen_.startswith("simple-mi")
    assert 0 < tight.cpu_estimate_ <= 0.06
    with pytest.raises(ValueError, match="not even the cheapest fits"):
        miltk.AutoMIL(candidates, max_cpu_minutes=1e-9).fit(bags, y)
    with pytest.raises(ValueError, match="max_cpu_minutes"):
        miltk.AutoMIL(candidates, max_cpu_minutes=-1.0).fit(bags, y)


POOLINGS = ("mean", "max", "noisy-or")


def test_a_vote_predicts_the_majority_of_its_members(musk1, tmp_path):
    import pickle

    bags, y, _ = musk1
    grid = [(miltk.MILR(), {"pooling": list(POOLINGS)})]
    vote = miltk.AutoMIL(grid, vote=3).fit(bags, y)
    assert vote.model_.n_voters == 3
    assert "voting with" in vote.chosen_ and vote.chosen_.count("milr (") == 3
    alone = np.array([miltk.MILR(pooling=p).fit(bags, y).predict(bags) for p in POOLINGS])
    majority = np.array([np.bincount(column).argmax() for column in alone.T])
    assert (alone != alone[0]).any(), "the poolings never disagree: the test shows nothing"
    assert np.array_equal(vote.predict(bags), majority)
    # A vote survives pickling with all its members.
    again = pickle.loads(pickle.dumps(vote))
    assert np.array_equal(again.predict(bags), majority)
    # What needs a single classifier is refused, naming the vote.
    with pytest.raises(ValueError, match="vote of 3"):
        vote.predict_instances(bags[:2])
    with pytest.raises(ValueError, match="vote of 3"):
        miltk.export(vote)
    # A vote of one is the choice alone.
    single = miltk.AutoMIL(grid, vote=1).fit(bags, y)
    assert single.model_.n_voters == 1 and "voting" not in single.chosen_


def test_a_vote_in_nested_cv_equals_the_command_line(musk1):
    bags, y, _ = musk1
    auto = miltk.AutoMIL([(miltk.MILR(), {"pooling": list(POOLINGS)})], vote=3, random_state=3)
    report = miltk.cross_validate_native(auto, bags, y, cv=miltk.StratifiedBagKFold(4, 3))
    cli = run_mil(
        "cv", "musk1", "--classifier", "milr", "--pooling", ",".join(POOLINGS),
        "--vote", "3", "--folds", "4", "--seed", "3",
    )
    if cli is None:
        pytest.skip("the mil program is not built")
    assert report["accuracy"] == cli["accuracy"]
    assert all("voting with" in c for c in report["chosen"])
    assert [c.split(", voting")[0] for c in report["chosen"]] == [c["classifier"] for c in cli["chosen"]]


@pytest.mark.parametrize("vote", [0, 4, 1.5, True])
def test_a_bad_vote_is_refused(musk1, vote):
    bags, y, _ = musk1
    auto = miltk.AutoMIL([(miltk.MILR(), {"pooling": list(POOLINGS)})], vote=vote)
    with pytest.raises((ValueError, TypeError), match="vote"):
        auto.fit(bags, y)


def test_a_grid_of_ridges_names_the_chosen_ridge(musk1):
    bags, y, _ = musk1
    auto = miltk.AutoMIL([(miltk.MILR(pooling="mean"), {"ridge": [1e-6, 1e3]})]).fit(bags, y)
    ridge = {"milr (mean pooling, ridge 0.000001)": 1e-6, "milr (mean pooling, ridge 1000)": 1e3}
    assert auto.chosen_ in ridge
    alone = miltk.MILR(pooling="mean", ridge=ridge[auto.chosen_]).fit(bags, y)
    assert np.array_equal(auto._scores(bags)[0], alone._scores(bags)[0])
