//! A reference forward pass of the fixture model, written from the Hugging Face Qwen3.5
//! equations on the checkpoint's own tensors (Hugging Face layout: grouped value heads, raw
//! `A_log`, zero-centred norms, `[channels, 1, kernel]` conv). It shares no code with the
//! converter, so agreement with llama.cpp's logits on the converted file checks every transform.

use super::*;

type Weights = BTreeMap<String, Tensor>;

fn w<'a>(ws: &'a Weights, name: &str) -> &'a [f32] {
    &ws.get(name)
        .unwrap_or_else(|| panic!("fixture has {name}"))
        .values
}

/// `W x` for a row-major `[rows, cols]` matrix.
fn matvec(m: &[f32], x: &[f32]) -> Vec<f32> {
    m.chunks_exact(x.len())
        .map(|row| row.iter().zip(x).map(|(a, b)| a * b).sum())
        .collect()
}

/// Qwen3.5's RMS norm: `x / rms(x) * (1 + w)`.
fn rms_norm_1p(x: &[f32], weight: &[f32]) -> Vec<f32> {
    let ms = x.iter().map(|v| v * v).sum::<f32>() / x.len() as f32;
    let r = 1.0 / (ms + EPS).sqrt();
    x.iter()
        .zip(weight)
        .map(|(v, g)| v * r * (1.0 + g))
        .collect()
}

fn silu(x: f32) -> f32 {
    x / (1.0 + (-x).exp())
}

fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

fn softplus(x: f32) -> f32 {
    (1.0 + x.exp()).ln()
}

fn l2_normalize(x: &mut [f32]) {
    let n = 1.0 / (x.iter().map(|v| v * v).sum::<f32>() + EPS).sqrt();
    x.iter_mut().for_each(|v| *v *= n);
}

fn mlp(ws: &Weights, p: &str, x: &[f32]) -> Vec<f32> {
    let g = matvec(w(ws, &format!("{p}mlp.gate_proj.weight")), x);
    let u = matvec(w(ws, &format!("{p}mlp.up_proj.weight")), x);
    let a: Vec<f32> = g.iter().zip(&u).map(|(g, u)| silu(*g) * u).collect();
    matvec(w(ws, &format!("{p}mlp.down_proj.weight")), &a)
}

/// NeoX-style rotation of the first ROPE_DIMS dims (text positions: every M-RoPE section sees
/// the same position, so the sections do not matter).
fn rope(x: &mut [f32], pos: usize) {
    let half = ROPE_DIMS / 2;
    for i in 0..half {
        let freq = THETA.powf(-2.0 * i as f32 / ROPE_DIMS as f32);
        let (s, c) = (pos as f32 * freq).sin_cos();
        let (a, b) = (x[i], x[i + half]);
        x[i] = a * c - b * s;
        x[i + half] = b * c + a * s;
    }
}

/// Gated attention over the sequence `hs` (already normed), causal.
fn attention(ws: &Weights, p: &str, hs: &[Vec<f32>]) -> Vec<Vec<f32>> {
    let hd = HEAD_DIM as usize;
    let (nh, nkv) = (HEADS as usize, KV_HEADS as usize);
    let mut qs = Vec::new();
    let mut gates = Vec::new();
    let mut ks = Vec::new();
    let mut vs = Vec::new();
    for (pos, h) in hs.iter().enumerate() {
        let qg = matvec(w(ws, &format!("{p}self_attn.q_proj.weight")), h);
        let kr = matvec(w(ws, &format!("{p}self_attn.k_proj.weight")), h);
        let v = matvec(w(ws, &format!("{p}self_attn.v_proj.weight")), h);
        let mut q = Vec::new();
        let mut gate = Vec::new();
        for head in qg.chunks_exact(2 * hd) {
            let mut qh = rms_norm_1p(&head[..hd], w(ws, &format!("{p}self_attn.q_norm.weight")));
            rope(&mut qh, pos);
            q.push(qh);
            gate.extend_from_slice(&head[hd..]);
        }
        let k: Vec<Vec<f32>> = kr
            .chunks_exact(hd)
            .map(|kh| {
                let mut kh = rms_norm_1p(kh, w(ws, &format!("{p}self_attn.k_norm.weight")));
                rope(&mut kh, pos);
                kh
            })
            .collect();
        qs.push(q);
        gates.push(gate);
        ks.push(k);
        vs.push(v);
    }
    let scale = 1.0 / (hd as f32).sqrt();
    (0..hs.len())
        .map(|t| {
            let mut out = Vec::with_capacity(nh * hd);
            for head in 0..nh {
                let g = head / (nh / nkv);
                let scores: Vec<f32> = (0..=t)
                    .map(|s| {
                        qs[t][head]
                            .iter()
                            .zip(&ks[s][g])
                            .map(|(a, b)| a * b)
                            .sum::<f32>()
                            * scale
                    })
                    .collect();
                let m = scores.iter().cloned().fold(f32::MIN, f32::max);
                let e: Vec<f32> = scores.iter().map(|s| (s - m).exp()).collect();
                let z: f32 = e.iter().sum();
                for d in 0..hd {
                    let v: f32 = (0..=t).map(|s| e[s] / z * vs[s][g * hd + d]).sum();
                    out.push(v * sigmoid(gates[t][head * hd + d]));
                }
            }
            matvec(w(ws, &format!("{p}self_attn.o_proj.weight")), &out)
        })
        .collect()
}

/// Gated DeltaNet over the sequence (recurrent form), Hugging Face layout.
fn deltanet(ws: &Weights, p: &str, hs: &[Vec<f32>]) -> Vec<Vec<f32>> {
    let la = |s: &str| format!("{p}linear_attn.{s}");
    let (dk, nk, nv) = (LIN_DIM as usize, K_HEADS as usize, V_HEADS as usize);
    let (kdim, conv_dim, kernel) = (KEY_DIM as usize, CONV_DIM as usize, KERNEL as usize);
    let mixed: Vec<Vec<f32>> = hs
        .iter()
        .map(|h| matvec(w(ws, &la("in_proj_qkv.weight")), h))
        .collect();
    let conv = w(ws, &la("conv1d.weight"));
    let a_log = w(ws, &la("A_log"));
    let dt_bias = w(ws, &la("dt_bias"));
    let mut state = vec![vec![0.0f32; dk * dk]; nv]; // [head][k][v]
    let mut outs = Vec::new();
    for (t, h) in hs.iter().enumerate() {
        // Causal depthwise conv: the last `kernel` inputs, zeros before the start, then SiLU.
        let c: Vec<f32> = (0..conv_dim)
            .map(|ch| {
                let mut acc = 0.0;
                for j in 0..kernel {
                    let back = kernel - 1 - j;
                    if t >= back {
                        acc += conv[ch * kernel + j] * mixed[t - back][ch];
                    }
                }
                silu(acc)
            })
            .collect();
        let z = matvec(w(ws, &la("in_proj_z.weight")), h);
        let b = matvec(w(ws, &la("in_proj_b.weight")), h);
        let a = matvec(w(ws, &la("in_proj_a.weight")), h);
        let mut o = vec![0.0f32; nv * dk];
        for vh in 0..nv {
            let kh = vh / (nv / nk); // value heads are grouped by key head
            let mut q = c[kh * dk..(kh + 1) * dk].to_vec();
            let mut k = c[kdim + kh * dk..kdim + (kh + 1) * dk].to_vec();
            let v = &c[2 * kdim + vh * dk..2 * kdim + (vh + 1) * dk];
            l2_normalize(&mut q);
            l2_normalize(&mut k);
            q.iter_mut().for_each(|x| *x /= (dk as f32).sqrt());
            let beta = sigmoid(b[vh]);
            let g = -a_log[vh].exp() * softplus(a[vh] + dt_bias[vh]);
            let s = &mut state[vh];
            s.iter_mut().for_each(|x| *x *= g.exp());
            for j in 0..dk {
                let mem: f32 = (0..dk).map(|i| s[i * dk + j] * k[i]).sum();
                let delta = (v[j] - mem) * beta;
                for i in 0..dk {
                    s[i * dk + j] += k[i] * delta;
                }
            }
            for j in 0..dk {
                o[vh * dk + j] = (0..dk).map(|i| s[i * dk + j] * q[i]).sum();
            }
        }
        // Gated RMS norm per head: plain weight (not 1 + w), times SiLU(z).
        let nw = w(ws, &la("norm.weight"));
        for vh in 0..nv {
            let head = &mut o[vh * dk..(vh + 1) * dk];
            let ms = head.iter().map(|x| x * x).sum::<f32>() / dk as f32;
            let r = 1.0 / (ms + EPS).sqrt();
            for (j, x) in head.iter_mut().enumerate() {
                *x = *x * r * nw[j] * silu(z[vh * dk + j]);
            }
        }
        outs.push(matvec(w(ws, &la("out_proj.weight")), &o));
    }
    outs
}

/// Next-token logits after `tokens`, by the Hugging Face equations.
pub fn logits(ws: &Weights, tokens: &[u32]) -> Vec<f32> {
    let h = HIDDEN as usize;
    let emb = w(ws, "model.language_model.embed_tokens.weight");
    let mut xs: Vec<Vec<f32>> = tokens
        .iter()
        .map(|&t| emb[t as usize * h..(t as usize + 1) * h].to_vec())
        .collect();
    for il in 0..LAYERS {
        let p = format!("model.language_model.layers.{il}.");
        let normed: Vec<Vec<f32>> = xs
            .iter()
            .map(|x| rms_norm_1p(x, w(ws, &format!("{p}input_layernorm.weight"))))
            .collect();
        let mixed = if (il + 1) % 4 == 0 {
            attention(ws, &p, &normed)
        } else {
            deltanet(ws, &p, &normed)
        };
        for (x, m) in xs.iter_mut().zip(mixed) {
            x.iter_mut().zip(&m).for_each(|(a, b)| *a += b);
            let n = rms_norm_1p(x, w(ws, &format!("{p}post_attention_layernorm.weight")));
            let f = mlp(ws, &p, &n);
            x.iter_mut().zip(&f).for_each(|(a, b)| *a += b);
        }
    }
    let last = xs.last().expect("at least one token");
    let n = rms_norm_1p(last, w(ws, "model.language_model.norm.weight"));
    matvec(emb, &n)
}
