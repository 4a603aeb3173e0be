"""The StandardAuthorizer's rules, decided in-process over bindings (no broker needed)."""

from __future__ import annotations

import pytest
from kafka.admin import ACLOperation as Op
from kafka.admin import ACLPermissionType as Perm
from kafka.admin import ACLResourcePatternType as Pattern
from kafka.admin import ResourceType as Res

from brokerd.security.acl import AclBinding, AclBindingFilter, InvalidAcl
from brokerd.security.authorizer import allowed_on_any, explain

pytestmark = pytest.mark.unit

ALICE, BOB = "User:alice", "User:bob"
HOST = "127.0.0.1"


def binding(
    op=Op.WRITE,
    perm=Perm.ALLOW,
    name="orders",
    principal=ALICE,
    host="*",
    pattern=Pattern.LITERAL,
    res=Res.TOPIC,
) -> AclBinding:
    return AclBinding(res, name, pattern, principal, host, op, perm)


def decide(
    bindings,
    op=Op.WRITE,
    name="orders",
    principal=ALICE,
    host=HOST,
    res=Res.TOPIC,
    super_users=frozenset(),
    allow_if_no_acl=False,
):
    return explain(bindings, principal, host, op, res, name, super_users, allow_if_no_acl)


def test_super_user_is_allowed_even_against_a_deny():
    decision = decide([binding(perm=Perm.DENY)], super_users=frozenset({ALICE}))
    assert decision.allowed and "super user" in decision.rule


def test_a_deny_wins_over_an_allow():
    deny = binding(perm=Perm.DENY, pattern=Pattern.PREFIXED, name="ord")
    decision = decide([binding(), deny])
    assert not decision.allowed and decision.binding == deny


def test_allow_matches_literal_wildcard_and_prefix():
    for allow in (binding(), binding(name="*"), binding(name="ord", pattern=Pattern.PREFIXED)):
        assert decide([allow]).allowed, allow
    assert not decide([binding(name="orders-eu", pattern=Pattern.PREFIXED)]).allowed
    assert not decide([binding(name="order")]).allowed  # a literal is no prefix


def test_principal_wildcard_and_host():
    assert decide([binding(principal="User:*")], principal=BOB).allowed
    assert not decide([binding()], principal=BOB).allowed
    assert decide([binding(host=HOST)]).allowed
    assert not decide([binding(host="10.0.0.1")]).allowed


@pytest.mark.parametrize("granted", [Op.READ, Op.WRITE, Op.DELETE, Op.ALTER, Op.ALL])
def test_describe_is_implied_by_allow(granted):
    decision = decide([binding(op=granted)], op=Op.DESCRIBE)
    assert decision.allowed
    assert ("implied" in decision.rule) == (granted != Op.ALL)


def test_alter_configs_implies_describe_configs_but_a_deny_implies_nothing():
    assert decide([binding(op=Op.ALTER_CONFIGS)], op=Op.DESCRIBE_CONFIGS).allowed
    assert not decide([binding(op=Op.CREATE)], op=Op.DESCRIBE).allowed
    denied_read = [binding(op=Op.READ, perm=Perm.DENY), binding(op=Op.DESCRIBE)]
    assert decide(denied_read, op=Op.DESCRIBE).allowed


def test_no_acl_for_the_resource_follows_allow_everyone_if_no_acl_found():
    others = [binding(name="payments")]
    assert not decide(others).allowed
    assert decide(others, allow_if_no_acl=True).allowed
    assert "allow.everyone.if.no.acl.found" in decide([]).rule


def test_acls_on_the_resource_that_do_not_match_deny_even_with_allow_everyone():
    decision = decide([binding(principal=BOB)], allow_if_no_acl=True)
    assert not decision.allowed and "default deny" in decision.rule


def test_allowed_on_any_topic_unless_denied_over_it():
    assert allowed_on_any([binding(name="t1")], ALICE, HOST, Op.WRITE, Res.TOPIC, frozenset())
    assert not allowed_on_any(
        [binding(name="t1"), binding(name="t", pattern=Pattern.PREFIXED, perm=Perm.DENY)],
        ALICE,
        HOST,
        Op.WRITE,
        Res.TOPIC,
        frozenset(),
    )
    assert not allowed_on_any([binding(name="t1")], BOB, HOST, Op.WRITE, Res.TOPIC, frozenset())


def test_filters_match_as_describe_and_delete_acls_do():
    prefixed = binding(name="ord", pattern=Pattern.PREFIXED)
    literal, wildcard = binding(), binding(name="*")
    match = AclBindingFilter(Res.TOPIC, "orders", Pattern.MATCH, None, None, Op.ANY, Perm.ANY)
    assert [b for b in (prefixed, literal, wildcard, binding(name="x")) if match.matches(b)] == [
        prefixed,
        literal,
        wildcard,
    ]
    any_filter = AclBindingFilter(Res.ANY, None, Pattern.ANY, BOB, None, Op.ANY, Perm.ANY)
    assert not any_filter.matches(literal) and any_filter.matches(binding(principal=BOB))
    exact = AclBindingFilter(Res.TOPIC, "ord", Pattern.PREFIXED, None, None, Op.WRITE, Perm.ALLOW)
    assert exact.matches(prefixed) and not exact.matches(literal)


@pytest.mark.parametrize(
    "bad, message",
    [
        (binding(res=Res.ANY), "Invalid resourceType"),
        (binding(pattern=Pattern.MATCH), "Invalid patternType"),
        (binding(op=Op.ANY), "Invalid operation"),
        (binding(perm=Perm.ANY), "Invalid permissionType"),
        (binding(name=""), "Resource name should not be empty"),
        (binding(res=Res.CLUSTER, name="c"), "kafka-cluster"),
        (binding(principal="alice"), "Could not parse principal"),
    ],
)
def test_invalid_bindings_are_refused_with_kafkas_words(bad, message):
    with pytest.raises(InvalidAcl, match=message):
        bad.validate()
