/* A thrash shaped like xz -3's LZMA encoder (hash-chain match finder): a dictionary written in a
 * ring, a hash table and a chain array read and written at random, the input read() into a heap
 * buffer in chunks, matches written out, and big buffers freed and taken again between rounds (the
 * allocator purges them). Its working set is several times a small -L, so under CLOCK most pages
 * go through probation, far memory and back many times.
 *   thrash <input KB> <dictionary MB> [file]
 *   thrash gen <MB>      (writes the generated text: an input file for the first form)
 * Prints one checksum line per MB of input and a last line with the total: the output is the same
 * with and without fltrace, whatever -L. Without a file, the input is generated (compressible text,
 * deterministic). */
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHUNK (64 * 1024)
#define HASH_BITS 20
#define CHAIN_STEPS 16

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Text from a vocabulary of 65536 made-up words: compressible, with matches near and far, and
 * trigrams spread over the whole hash table. */
static size_t gen_text(char *buf, size_t n)
{
	static char words[65536][10];
	static bool made;
	static const char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/";
	if (!made) {
		for (int w = 0; w < 65536; w++) {
			int len = 2 + (int)(next_rand() % 8);
			for (int c = 0; c < len; c++)
				words[w][c] = alphabet[next_rand() % 64];
			words[w][len] = next_rand() % 8 ? ' ' : '\n';
		}
		made = true;
	}
	size_t i = 0;
	while (i < n) {
		const char *w = words[next_rand() % 65536];
		while (*w && i < n)
			buf[i++] = *w++;
	}
	return n;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "gen") == 0) {
		static char buf[CHUNK];
		for (long left = atol(argv[2]) << 20; left > 0; left -= CHUNK)
			if (fwrite(buf, 1, gen_text(buf, CHUNK), stdout) != CHUNK)
				return 1;
		return 0;
	}
	if (argc < 3) {
		fprintf(stderr, "usage: thrash <input KB> <dictionary MB> [file]\n");
		return 2;
	}
	size_t in_total = (size_t)atoi(argv[1]) << 10;
	size_t dict_size = (size_t)atoi(argv[2]) << 20;
	int fd = argc > 3 ? open(argv[3], O_RDONLY) : -1;
	if (argc > 3 && fd < 0) {
		perror(argv[3]);
		return 1;
	}
	uint32_t *head = calloc((size_t)1 << HASH_BITS, sizeof(uint32_t));
	uint32_t *chain = calloc(dict_size, sizeof(uint32_t));
	unsigned char *dict = malloc(dict_size);
	unsigned char *in = malloc(CHUNK);
	unsigned char *out = malloc(CHUNK);
	if (!head || !chain || !dict || !in || !out)
		return 1;
	uint64_t pos = 0, sum = 0, mb_sum = 0, matches = 0;
	size_t outn = 0, done = 0;
	while (done < in_total) {
		size_t want = in_total - done < CHUNK ? in_total - done : CHUNK;
		ssize_t got = fd >= 0 ? read(fd, in, want) : (ssize_t)gen_text((char *)in, want);
		if (got <= 0)
			break;
		for (ssize_t i = 0; i < got; i++, pos++) {
			size_t at = pos % dict_size;
			dict[at] = in[i];
			if (pos < 3)
				continue;
			size_t p3 = (pos - 3) % dict_size;
			uint32_t h = ((uint32_t)dict[p3] | (uint32_t)dict[(p3 + 1) % dict_size] << 8 |
				      (uint32_t)dict[(p3 + 2) % dict_size] << 16) * 2654435761u >> (32 - HASH_BITS);
			uint32_t cand = head[h], best = 0;
			for (int s = 0; s < CHAIN_STEPS && cand && pos - 3 - (cand - 1) < dict_size - 64; s++) {
				size_t c = (cand - 1) % dict_size;
				uint32_t len = 0;
				while (len < 32 && dict[(c + len) % dict_size] == dict[(p3 + len) % dict_size] &&
				       (c + len) % dict_size != at)
					len++;
				if (len > best)
					best = len;
				cand = chain[c];
			}
			chain[p3] = head[h];
			head[h] = (uint32_t)(pos - 3 + 1);
			matches += best >= 3;
			out[outn++] = (unsigned char)(best ^ in[i]);
			if (outn == CHUNK) {
				for (size_t k = 0; k < outn; k += 8)
					sum = sum * 31 + out[k];
				if (write(STDOUT_FILENO, "", 0) < 0) /* a system call touching no buffer */
					return 1;
				outn = 0;
			}
		}
		done += (size_t)got;
		if (done % (1u << 20) == 0) {
			printf("%zu MB: sum %016llx matches %llu\n", done >> 20, (unsigned long long)(sum ^ mb_sum),
			       (unsigned long long)matches);
			mb_sum = sum;
			/* Between rounds, as an encoder between blocks: a big buffer freed (purged by
			 * the allocator) and taken again, its contents rebuilt. */
			unsigned char *moved = malloc(CHUNK);
			unsigned char *tmp = malloc(4u << 20);
			if (!moved || !tmp)
				return 1;
			memcpy(moved, out, outn);
			free(out);
			out = moved;
			memset(tmp, (int)(done >> 20), 4u << 20);
			sum += tmp[next_rand() % (4u << 20)];
			free(tmp);
		}
	}
	printf("total: %zu bytes, sum %016llx, matches %llu\n", done, (unsigned long long)sum,
	       (unsigned long long)matches);
	return 0;
}
