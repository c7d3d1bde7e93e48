import pytest


@pytest.fixture
def ort():
    pytest.importorskip("onnx")
    return pytest.importorskip("onnxruntime")
