"""`rlvr row --from trl|verl` (rlvr/peers.py): a trainer's settings, by the peers' own names, become a
toy row that trains; a peer's default stands where the file is silent; what has no toy
counterpart is listed or refused, never dropped silently."""

import subprocess
import sys

import pytest
import yaml

import rlvr
from rlvr import peers as P

TRL = """# a GRPOConfig as a user writes it
learning_rate: 1.0e-6
num_generations: 8
num_iterations: 2
epsilon: 0.2
epsilon_high: 0.28
beta: 0.04
loss_type: dr_grpo
scale_rewards: none
temperature: 0.9
"""
VERL = """python3 -m verl.trainer.main_ppo \\
    algorithm.adv_estimator=grpo \\
    data.train_batch_size=32 \\
    actor_rollout_ref.actor.optim.lr=1e-6 \\
    actor_rollout_ref.actor.ppo_mini_batch_size=16 \\
    actor_rollout_ref.actor.use_kl_loss=True \\
    actor_rollout_ref.actor.kl_loss_coef=0.001 \\
    actor_rollout_ref.actor.kl_loss_type=low_var_kl \\
    actor_rollout_ref.rollout.n=8 \\
    trainer.total_epochs=15 $@
"""


def _trains(got):
    """The row trains on the toy (a few steps, two seeds) and returns exact pass@1 in (0, 1)."""
    knobs = {k: v for k, v in got.row.items() if k not in ("method", "G")}
    runs = rlvr.train(rlvr.make_task(), got.row["method"], steps=5, prompts_per_step=8, G=got.row["G"],
                      lr=2.0, seed=[0, 1], **knobs)
    return [run["history"][-1].pass1 for run in runs]


def test_a_trl_config_written_by_hand_becomes_a_row_that_trains(tmp_path):
    path = tmp_path / "grpo.yaml"
    path.write_text(TRL)
    got = P.translate(path, "trl")
    assert got.row == {"G": 8, "epochs": 2, "method": "dr_grpo", "minibatches": 1,
                       "loss_agg": "seq-mean-token-sum-norm", "clip_low": 0.2, "clip_high": 0.28,
                       "kl_beta": 0.04, "kl_estimator": "k3", "kl_placement": "loss"}
    assert [u.split(" ")[0] for u in got.unmapped] == ["learning_rate", "temperature"]
    assert all(0 < p < 1 for p in _trains(got))


def test_a_verl_command_line_and_its_yaml_become_the_same_row_that_trains(tmp_path):
    script = tmp_path / "run_grpo.sh"
    script.write_text(VERL)
    got = P.translate(script, "verl")
    assert got.row == {"G": 8, "epochs": 1, "method": "grpo_unbiased_std", "minibatches": 2, "clip_low": 0.2,
                       "clip_high": 0.2, "policy_loss": "ppo", "clip_c": 3.0, "loss_agg": "token-mean",
                       "kl_beta": 0.001, "kl_estimator": "k3", "kl_placement": "loss"}
    unmapped = [u.split(" ")[0] for u in got.unmapped]
    assert unmapped == ["actor_rollout_ref.actor.optim.lr", "trainer.total_epochs"]
    nested = {"algorithm": {"adv_estimator": "grpo"}, "data": {"train_batch_size": 32},
              "trainer": {"total_epochs": 15},
              "actor_rollout_ref": {"rollout": {"n": 8},
                                    "actor": {"optim": {"lr": 1e-6}, "ppo_mini_batch_size": 16,
                                              "use_kl_loss": True, "kl_loss_coef": 0.001,
                                              "kl_loss_type": "low_var_kl"}}}
    (tmp_path / "ppo.yaml").write_text(yaml.safe_dump(nested))
    assert P.translate(tmp_path / "ppo.yaml", "verl") == got
    assert all(0 < p < 1 for p in _trains(got))


def test_a_peers_defaults_stand_where_the_file_is_silent():
    """TRL's: G 8, token-mean (dapo), the N−1 std (group), ε 0.2 both sides, no KL; verl's with GRPO:
    rollout.n 1, a dual clip at 3, token-mean, m = 1024/256 = 4."""
    assert P.from_trl({}).row == {"G": 8, "epochs": 1, "method": "grpo_unbiased_std", "minibatches": 1,
                                  "loss_agg": "token-mean", "clip_low": 0.2, "clip_high": 0.2}
    verl = P.from_verl({"algorithm": {"adv_estimator": "grpo"}}).row
    assert verl["G"] == 1 and verl["clip_c"] == 3.0 and verl["loss_agg"] == "token-mean"
    assert verl["minibatches"] == 4
    cispo = P.from_trl({"loss_type": "cispo", "epsilon_high": 5.0}).row  # TRL caps at epsilon_high itself
    assert cispo["policy_loss"] == "cispo" and cispo["clip_low"] is None and cispo["clip_high"] == 4.0


@pytest.mark.parametrize("peer, settings, words", [
    ("trl", {"loss_type": "sapo"}, ["loss_type = 'sapo'", "no counterpart", "dr_grpo"]),
    ("verl", {}, ["algorithm.adv_estimator = 'gae'", "grpo"]),
    ("verl", {"algorithm.adv_estimator": "grpo", "actor_rollout_ref.actor.use_kl_loss": True,
              "algorithm.use_kl_in_reward": True}, ["both set", "kl_placement"]),
    ("trl", {"delta": 1.1, "epsilon_high": 0.28}, ["delta = 1.1", "1.28"]),
])
def test_what_the_toy_cannot_run_is_refused_by_name(peer, settings, words):
    with pytest.raises(ValueError) as err:
        P.PEERS[peer](settings)
    for word in words:
        assert word in str(err.value), (word, str(err.value))


def test_the_command_prints_a_row_and_a_missing_file_is_one_line(tmp_path):
    path = tmp_path / "grpo.yaml"
    path.write_text(TRL)
    done = subprocess.run([sys.executable, "-m", "rlvr", "row", "--from", "trl", str(path)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    row = yaml.safe_load("\n".join(line for line in done.stdout.splitlines() if not line.startswith("#")))
    assert row[0]["method"] == "dr_grpo" and "no toy counterpart, not used: learning_rate" in done.stdout
    done = subprocess.run([sys.executable, "-m", "rlvr", "row", "--from", "verl",
                           str(tmp_path / "nope.yaml")], capture_output=True, text=True)
    assert done.returncode == 2 and "nope.yaml: no such file" in done.stderr
    assert "Traceback" not in done.stderr
