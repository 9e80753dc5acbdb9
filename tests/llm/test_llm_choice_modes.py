"""How LiteLLM models are asked to choose (issue #17): schema, bias, logprobs, text.

Every test drives ``LiteLLMModel`` against the OpenAI-compatible stub (``tests/stub_server.py``)
and reads what was sent from ``stub.requests``. Model names only decide what ``auto`` picks
(LiteLLM's offline model table); every request goes to the stub.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.stub_server import StubServer

from fllm_cli.errors import BackendError, UsageError
from fllm_cli.llm import ChoiceRequest
from fllm_cli.llm.base import ChoiceResult, GenerateRequest
from fllm_cli.llm.cache import ResponseCache
from fllm_cli.llm.litellm_backend import (
    LiteLLMModel,
    choice_schema,
    read_reply,
    refuses_parameter,
    retry_temperature,
)
from fllm_cli.llm.options import ModelOptions

OPTIONS = ("Image Denoising", "Colorization", "Image Captioning")
REQUEST = ChoiceRequest(prompt="Pick one.\n1. a\n2. b\n3. c", options=OPTIONS)
EXTRAS = ("response_format", "logprobs", "top_logprobs", "logit_bias")


def _model(
    stub: StubServer,
    mode: str = "auto",
    name: str = "openai/stub",
    retries: int = 3,
    temperature: float = 0.0,
) -> LiteLLMModel:
    options = ModelOptions(
        api_base=stub.base,
        retries=retries,
        timeout=5.0,
        cache=False,
        choice_mode=mode,
        temperature=temperature,
    )
    model = LiteLLMModel(name, options)
    model.backoff_base = 0.01
    return model


def _choose(model: LiteLLMModel, request: ChoiceRequest = REQUEST) -> ChoiceResult:
    result = model.choose(request)
    assert isinstance(result, ChoiceResult)
    assert 0 <= result.index < len(request.options)  # whatever happened
    return result


def _extras(body: dict[str, Any]) -> set[str]:
    return {key for key in EXTRAS if key in body}


# ------------------------------------------------------------------ which mode auto picks


@pytest.mark.parametrize(
    ("name", "mode", "sent"),
    [
        ("openai/gpt-4o", "schema", {"response_format"}),
        ("openai/gpt-4", "bias", {"logit_bias"}),
        ("openai/stub", "logprobs", {"logprobs", "top_logprobs"}),
    ],
)
def test_auto_picks_the_best_mode_the_provider_supports(
    stub_server: StubServer, name: str, mode: str, sent: set[str]
) -> None:
    model = _model(stub_server, name=name)
    assert model.choice_mode(len(OPTIONS)) == mode
    replies = {"schema": "json:2", "bias": "ok:2", "logprobs": "logprobs:2=0.9,1=0.1"}
    stub_server.play(then=replies[mode])
    result = _choose(model)
    assert (result.index, result.mode, result.calls) == (1, mode, 1)
    assert _extras(stub_server.requests[0]) == sent


def test_text_mode_sends_no_extra_parameter(stub_server: StubServer) -> None:
    stub_server.play("ok:3")
    result = _choose(_model(stub_server, "text", name="openai/gpt-4o"))
    assert (result.index, result.mode) == (2, "text")
    assert _extras(stub_server.requests[0]) == set()
    assert stub_server.requests[0]["max_tokens"] == 8


# ------------------------------------------------------------------ schema


def test_schema_request_carries_an_enum_of_the_option_numbers(stub_server: StubServer) -> None:
    stub_server.play("json:2")
    result = _choose(_model(stub_server, "schema"))
    assert (result.index, result.mode, result.fallback) == (1, "schema", False)
    assert result.raw == '{"choice": 2}'
    body = stub_server.requests[0]
    assert body["response_format"] == choice_schema(3)
    schema = body["response_format"]["json_schema"]
    assert schema["strict"] is True
    assert schema["schema"]["properties"]["choice"]["enum"] == [1, 2, 3]
    assert schema["schema"]["required"] == ["choice"]
    assert "logprobs" not in body


def test_schema_ignored_by_the_server_is_read_as_text(stub_server: StubServer) -> None:
    stub_server.play("ok:I pick 3.")
    result = _choose(_model(stub_server, "schema"))
    assert (result.index, result.mode) == (2, "text")


@pytest.mark.parametrize("bad", ["json:7", "json:0", "json:two", 'ok:{"choice": null}'])
def test_schema_reply_out_of_range_is_asked_again_warmer(stub_server: StubServer, bad: str) -> None:
    stub_server.play(bad, "json:3")
    result = _choose(_model(stub_server, "schema"))
    assert (result.index, result.mode, result.calls, result.fallback) == (2, "schema", 2, False)
    first, second = stub_server.requests
    assert (first["temperature"], second["temperature"]) == (0.0, 0.3)
    assert "does not name one of the options" in second["messages"][-1]["content"]
    assert [e["temperature"] for e in result.exchanges] == [0.0, 0.3]


# ------------------------------------------------------------------ logprobs


def test_logprobs_request_and_answer(stub_server: StubServer) -> None:
    stub_server.play("logprobs:2=0.6, 3=0.3,1=0.1")
    result = _choose(_model(stub_server, "logprobs"))
    assert (result.index, result.mode, result.calls) == (1, "logprobs", 1)
    body = stub_server.requests[0]
    assert body["logprobs"] is True and body["top_logprobs"] == 5
    assert "response_format" not in body
    probs = result.exchanges[0]["probs"]
    assert probs == pytest.approx({"1": 0.1, "2": 0.6, "3": 0.3})


def test_logprobs_out_of_range_first_token_takes_the_best_option(stub_server: StubServer) -> None:
    stub_server.play("logprobs:7=0.5,3=0.3,1=0.2")  # the model said 7 of 3: no re-ask needed
    result = _choose(_model(stub_server, "logprobs"))
    assert (result.index, result.mode, result.calls) == (2, "logprobs", 1)


def test_logprobs_spaced_tokens_add_up(stub_server: StubServer) -> None:
    stub_server.play("logprobs:1=0.4, 2=0.35,2=0.25")
    result = _choose(_model(stub_server, "logprobs"))
    assert result.index == 1  # 0.35 + 0.25 for "2" beats 0.4 for "1"


def test_logprobs_word_first_then_an_option_in_the_text(stub_server: StubServer) -> None:
    stub_server.play("logprobs:The=0.6,1=0.3:The answer is 3")
    result = _choose(_model(stub_server, "logprobs"))
    assert (result.index, result.mode) == (2, "text")


def test_logprobs_rescue_a_reply_that_names_no_option(stub_server: StubServer) -> None:
    stub_server.play("logprobs:The=0.6,2=0.3:The answer is unclear")
    result = _choose(_model(stub_server, "logprobs"))
    assert (result.index, result.mode, result.calls) == (1, "logprobs", 1)


def test_logprobs_digit_split_number_is_read_whole(stub_server: StubServer) -> None:
    options = tuple(f"option {i}" for i in range(1, 13))
    request = ChoiceRequest(prompt="Pick one of 12.", options=options)
    stub_server.play("logprobs:1=0.8,2=0.1:12")  # a tokenizer that writes 12 as "1", "2"
    result = _choose(_model(stub_server, "logprobs"), request)
    assert (result.index, result.mode) == (11, "logprobs")
    assert stub_server.requests[0]["top_logprobs"] == 12


def test_logprobs_missing_from_the_reply_fall_back_to_the_text(stub_server: StubServer) -> None:
    stub_server.play("ok:3")
    result = _choose(_model(stub_server, "logprobs"))
    assert (result.index, result.mode) == (2, "text")


# ------------------------------------------------------------------ logit_bias


def test_bias_allows_only_the_option_number_tokens(stub_server: StubServer) -> None:
    stub_server.play("ok:2")
    result = _choose(_model(stub_server, "bias", name="openai/gpt-4o"))
    assert (result.index, result.mode) == (1, "bias")
    body = stub_server.requests[0]
    assert body["logit_bias"] == {"16": 100, "17": 100, "18": 100}  # "1", "2", "3" (o200k)
    assert body["max_tokens"] == 1


def test_bias_without_a_known_tokenizer_is_text(stub_server: StubServer) -> None:
    stub_server.play("ok:2")
    model = _model(stub_server, "bias")  # openai/stub: no tokenizer to find the digits' ids
    assert model.choice_mode(3) == "text"
    result = _choose(model)
    assert (result.index, result.mode) == (1, "text")
    assert _extras(stub_server.requests[0]) == set()


# ------------------------------------------------------------------ refused parameters


@pytest.mark.parametrize(
    ("mode", "param", "reply"),
    [("schema", "response_format", "ok:2"), ("logprobs", "logprobs", "ok:2")],
)
def test_refused_parameter_falls_back_once_and_is_remembered(
    stub_server: StubServer, mode: str, param: str, reply: str
) -> None:
    stub_server.refuse(param)
    stub_server.play(then=reply)
    model = _model(stub_server, mode)
    first = _choose(model)
    assert (first.index, first.mode, first.calls, first.fallback) == (1, "text", 2, False)
    refused, sent_again = stub_server.requests
    assert param in refused and param not in sent_again
    assert (
        first.exchanges[0]["asked"] == mode
        and "Unsupported parameter" in (first.exchanges[0]["refused"])
    )
    assert model.refused == {mode}
    second = _choose(model)  # the rest of the run: not sent again
    assert (second.index, second.calls) == (1, 1)
    assert len(stub_server.requests) == 3
    assert _extras(stub_server.requests[-1]) == set()


def test_auto_moves_on_to_the_next_supported_mode(stub_server: StubServer) -> None:
    stub_server.refuse("response_format")
    stub_server.play(then="ok:3")
    model = _model(stub_server, name="openai/gpt-4o")
    result = _choose(model)
    assert (result.index, result.mode, result.calls) == (2, "bias", 2)
    assert [sorted(_extras(b)) for b in stub_server.requests] == [
        ["response_format"],
        ["logit_bias"],
    ]
    assert model.choice_mode(3) == "bias"


def test_auto_refused_logprobs_end_in_text(stub_server: StubServer) -> None:
    stub_server.refuse("logprobs", "top_logprobs")
    stub_server.play(then="ok:1")
    model = _model(stub_server)
    assert _choose(model).index == 0
    assert _choose(model).index == 0
    assert [sorted(_extras(b)) for b in stub_server.requests] == [
        ["logprobs", "top_logprobs"],
        [],
        [],
    ]


def test_a_400_about_something_else_is_not_a_refusal(stub_server: StubServer) -> None:
    stub_server.play(then="400")  # "stub 400": says nothing about a parameter
    with pytest.raises(BackendError) as info:
        _model(stub_server, "schema").choose(REQUEST)
    assert info.value.message == "the provider refused the request: stub 400"
    assert stub_server.hits == 1


def test_refusal_detection() -> None:
    class BadRequestError(Exception):
        status_code = 400

    class ContextWindowExceededError(BadRequestError):
        pass

    assert refuses_parameter(BadRequestError("Unsupported parameter: 'logprobs'"))
    assert refuses_parameter(BadRequestError("response_format is not supported by this model"))
    assert not refuses_parameter(BadRequestError("stub 400"))
    assert not refuses_parameter(ContextWindowExceededError("logprobs: prompt too long"))
    assert not refuses_parameter(RuntimeError("unsupported parameter"))  # not a 400

    class InternalServerError(Exception):
        status_code = 500

    # llama-cpp-python's server: a 500 whose message names the parameter sent as invalid
    llama_cpp = InternalServerError(
        "1 validation error: ('body', 'response_format', 'type') Input should be 'text' or "
        "'json_object', input: 'json_schema'"
    )
    assert refuses_parameter(llama_cpp, ("response_format", "json_schema"))
    assert not refuses_parameter(llama_cpp, ("logprobs",))  # not about what was sent
    assert not refuses_parameter(InternalServerError("stub 500"), ("response_format",))


def test_transport_retries_still_apply_in_structured_modes(stub_server: StubServer) -> None:
    stub_server.play("429", "500", "json:1")
    result = _choose(_model(stub_server, "schema"))
    assert (result.index, result.calls, result.mode) == (0, 3, "schema")
    assert all("response_format" in body for body in stub_server.requests)


# ------------------------------------------------------------------ re-asking, warmer


def test_unparseable_reply_is_asked_again_with_a_rising_temperature(
    stub_server: StubServer,
) -> None:
    stub_server.play("ok:banana", "ok:", "ok:maybe 9", then="ok:2")
    result = _choose(_model(stub_server, "text", retries=3))
    assert (result.index, result.calls, result.fallback) == (1, 4, False)
    temperatures = [body["temperature"] for body in stub_server.requests]
    assert temperatures == pytest.approx([0.0, 0.3, 0.6, 0.9])
    prompts = [body["messages"][-1]["content"] for body in stub_server.requests]
    assert len(set(prompts)) == 4  # never the identical request twice


def test_temperature_rises_to_the_cap_and_never_drops() -> None:
    assert [retry_temperature(0.0, a) for a in range(6)] == pytest.approx(
        [0.0, 0.3, 0.6, 0.9, 1.0, 1.0]
    )
    assert [retry_temperature(0.8, a) for a in range(3)] == pytest.approx([0.8, 1.0, 1.0])
    assert [retry_temperature(1.5, a) for a in range(3)] == pytest.approx([1.5, 1.5, 1.5])


def test_retries_bound_the_re_asks(stub_server: StubServer) -> None:
    stub_server.play(then="ok:no idea")
    result = _choose(_model(stub_server, "text", retries=1))
    assert (result.index, result.calls, result.fallback) == (0, 2, True)
    assert stub_server.hits == 2


@pytest.mark.parametrize("mode", ["auto", "schema", "logprobs", "text"])
@pytest.mark.parametrize(
    "replies",
    [
        ["json:9", "json:-1", 'ok:{"choice": true}'],
        ["logprobs:0=0.9,9=0.1", "logprobs:x=1.0:nothing"],
        ["empty", "malformed", "ok:", "ok:banana 42"],
    ],
)
def test_every_result_is_a_valid_option(
    stub_server: StubServer, mode: str, replies: list[str]
) -> None:
    stub_server.play(*replies, then="ok:nothing useful")
    result = _choose(_model(stub_server, mode, retries=2))
    assert result.fallback and result.index == 0


# ------------------------------------------------------------------ cache, parsing, options


def test_structured_answers_are_cached(stub_server: StubServer, tmp_path: Path) -> None:
    for mode, reply in (("schema", "json:3"), ("logprobs", "logprobs:The=0.5,3=0.4:The best")):
        model = _model(stub_server, mode)
        model.cache = ResponseCache(tmp_path / f"{mode}.sqlite3")
        stub_server.play(reply)
        before = stub_server.hits
        first, second = _choose(model), _choose(model)
        assert first.index == second.index == 2
        assert (second.calls, second.cached, second.mode) == (0, True, mode)
        assert stub_server.hits == before + 1


def test_read_reply() -> None:
    assert read_reply('{"choice": 2}', OPTIONS) == (1, True)
    assert read_reply('```json\n{"choice": "3"}\n```', OPTIONS) == (2, True)
    assert read_reply('{"choice": 4}', OPTIONS) == (None, True)
    assert read_reply('{"choice": 1, "why": "Colorization"}', OPTIONS) == (0, True)
    assert read_reply("Option 2, surely", OPTIONS) == (1, False)
    assert read_reply("the output of Image Captioning", OPTIONS) == (2, False)
    assert read_reply("no idea", OPTIONS) == (None, False)


def test_unknown_choice_mode_is_a_usage_error() -> None:
    with pytest.raises(UsageError):
        LiteLLMModel("openai/stub", ModelOptions(choice_mode="grammar"))


def test_cli_model_options_take_the_flag_then_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from fllm_cli.cli.options import model_options

    monkeypatch.delenv("FLLM_CHOICE_MODE", raising=False)
    assert model_options(None, 0.0, 60.0, 4, False).choice_mode == "auto"
    monkeypatch.setenv("FLLM_CHOICE_MODE", "logprobs")
    assert model_options(None, 0.0, 60.0, 4, False).choice_mode == "logprobs"
    assert model_options(None, 0.0, 60.0, 4, False, choice_mode="Text").choice_mode == "text"
    with pytest.raises(UsageError, match="--choice-mode"):
        model_options(None, 0.0, 60.0, 4, False, choice_mode="json")
    monkeypatch.setenv("FLLM_CHOICE_MODE", "nope")
    with pytest.raises(UsageError, match="FLLM_CHOICE_MODE"):
        model_options(None, 0.0, 60.0, 4, False)


# ------------------------------------------------------------------ JSON replies (generate)

SCHEMA = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}


def _json_request(schema: dict[str, Any] | None = SCHEMA) -> GenerateRequest:
    return GenerateRequest("Reply with x.", max_tokens=50, kind="formulator", schema=schema)


@pytest.mark.parametrize(("name", "mode"), [("openai/gpt-4o", "auto"), ("openai/stub", "schema")])
def test_a_json_reply_is_asked_with_its_schema_where_the_provider_takes_one(
    stub_server: StubServer, name: str, mode: str
) -> None:
    stub_server.play(then='ok:{"x": 1}')
    gen = _model(stub_server, mode, name=name).generate(_json_request())
    assert gen.text == '{"x": 1}' and gen.calls == 1
    sent = stub_server.requests[0]["response_format"]
    assert sent == {"type": "json_schema", "json_schema": {"name": "formulator", "schema": SCHEMA}}


@pytest.mark.parametrize(("name", "mode"), [("openai/stub", "auto"), ("openai/gpt-4o", "text")])
def test_no_schema_where_the_provider_is_not_known_to_take_one_or_text_is_asked(
    stub_server: StubServer, name: str, mode: str
) -> None:
    stub_server.play(then='ok:{"x": 1}')
    _model(stub_server, mode, name=name).generate(_json_request())
    model = _model(stub_server, "schema", name="openai/gpt-4o")
    model.generate(_json_request(schema=None))  # plain text wanted: nothing extra
    assert all("response_format" not in r for r in stub_server.requests)


def test_a_refused_schema_is_asked_again_as_text_and_not_sent_again(
    stub_server: StubServer,
) -> None:
    stub_server.refuse("response_format")
    stub_server.play(then='ok:{"x": 2}')
    model = _model(stub_server, "schema")
    gen = model.generate(_json_request())
    assert (gen.text, gen.calls) == ('{"x": 2}', 2)
    assert "response_format" in stub_server.requests[0]
    assert "response_format" not in stub_server.requests[1]
    assert model.generate(_json_request()).calls == 1  # the rest of the run: text at once
    assert len(stub_server.requests) == 3 and "schema" in model.refused
