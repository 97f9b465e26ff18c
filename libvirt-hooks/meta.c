// SPDX-License-Identifier: MIT
/*
 * The domain XML libvirt gives a hook on stdin, read with libxml2: no
 * network, no DTD, no entity substitution.  Only <name>, <uuid>, the
 * project's element in <metadata> and the -device sivshm,... of
 * <qemu:commandline> are looked at; docs/libvirt.md has the schema.
 */
#include <inttypes.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

#include "hook.h"

/* The metadata fields, in the order docs/libvirt.md lists them. */
enum field {
	F_ROLE,
	F_SERVICE,
	F_VM_ID,
	F_SOCKET,
	F_SIZE,
	F_REDUCERS,
	F_UNLINK,
	F_DIR,
	F_COUNT,
};

static const char *const field_name[F_COUNT] = {
	[F_ROLE] = "role",
	[F_SERVICE] = "service",
	[F_VM_ID] = "vm-id",
	[F_SOCKET] = "socket",
	[F_SIZE] = "size",
	[F_REDUCERS] = "reducers",
	[F_UNLINK] = "unlink",
	[F_DIR] = "dir",
};

#define REQUIRED_FIELDS	(F_REDUCERS + 1)	/* role .. reducers */

static int in_ns(const xmlNode *n, const char *href)
{
	if (!n->ns || !n->ns->href)
		return !href;
	return href && !strcmp((const char *)n->ns->href, href);
}

static int is_elem(const xmlNode *n, const char *href, const char *name)
{
	return n->type == XML_ELEMENT_NODE && in_ns(n, href) &&
	       !strcmp((const char *)n->name, name);
}

static int is_blank(const char *s)
{
	return strspn(s, " \t\r\n") == strlen(s);
}

/*
 * The text of leaf element @n, without surrounding white space, into @out
 * (HOOK_FIELD_MAX + 1 bytes).  Only text may be inside.
 */
static int leaf_text(const xmlNode *n, const char *what, char *out,
		     struct hook_err *e)
{
	size_t len = 0, start, end;

	if (n->properties)
		return hook_fail(e, "%s: attributes are not allowed", what);
	for (const xmlNode *c = n->children; c; c = c->next) {
		size_t add;

		if (c->type != XML_TEXT_NODE && c->type != XML_CDATA_SECTION_NODE)
			return hook_fail(e, "%s: only text is allowed inside", what);
		add = strlen((const char *)c->content);
		if (add > HOOK_FIELD_MAX - len)
			return hook_fail(e, "%s: longer than %d bytes", what,
					 HOOK_FIELD_MAX);
		memcpy(out + len, c->content, add);
		len += add;
	}
	out[len] = '\0';
	for (start = 0; start < len && strchr(" \t\r\n", out[start]); start++)
		;
	for (end = len; end > start && strchr(" \t\r\n", out[end - 1]); end--)
		;
	memmove(out, out + start, end - start);
	out[end - start] = '\0';
	if (!out[0])
		return hook_fail(e, "%s is empty", what);
	return 0;
}

static int set_path(char *dst, size_t max, const char *what, const char *v,
		    struct hook_err *e)
{
	const char *why;

	if (strlen(v) > max)
		return hook_fail(e, "%s: longer than %zu bytes", what, max);
	if (value_path(v, max, &why))
		return hook_fail(e, "%s %s: %s", what, v, why);
	strcpy(dst, v);
	return 0;
}

static int set_field(struct hook_meta *m, enum field f, const char *v,
		     struct hook_err *e)
{
	const char *what = field_name[f];
	const char *why = NULL;
	int bad = 0;

	switch (f) {
	case F_ROLE:
		if (!strcmp(v, "mapper"))
			m->role = HOOK_MAPPER;
		else if (!strcmp(v, "reducer"))
			m->role = HOOK_REDUCER;
		else
			return hook_fail(e, "role %s: neither mapper nor reducer", v);
		return 0;
	case F_SERVICE:
		bad = value_service(v, &why);
		if (!bad)
			strcpy(m->service, v);
		break;
	case F_VM_ID:
		bad = value_u32(v, SIVSHM_MAX_REDUCERS, &m->vm_id, &why);
		break;
	case F_SOCKET:
		return set_path(m->socket, HOOK_SOCKET_MAX, what, v, e);
	case F_SIZE:
		bad = value_size(v, &m->size, &why);
		break;
	case F_REDUCERS:
		bad = value_u32(v, SIVSHM_MAX_REDUCERS, &m->reducers, &why);
		break;
	case F_UNLINK:
		bad = value_onoff(v, &m->unlink, &why);
		break;
	case F_DIR:
		return set_path(m->dir, HOOK_PATH_MAX, what, v, e);
	default:
		break;
	}
	if (bad)
		return hook_fail(e, "%s %s: %s", what, v, why);
	return 0;
}

int meta_check(const struct hook_meta *m, struct hook_err *e)
{
	const char *why;
	const char *slash = strrchr(m->socket, '/');

	if (m->reducers < 1)
		return hook_fail(e, "reducers must be 1 to %d", SIVSHM_MAX_REDUCERS);
	if (m->role == HOOK_MAPPER && m->vm_id != 0)
		return hook_fail(e, "a mapper's vm-id is 0, not %u", m->vm_id);
	if (m->role == HOOK_REDUCER && m->vm_id == 0)
		return hook_fail(e, "a reducer's vm-id is 1 to its reducers (%u), not 0",
				 m->reducers);
	if (m->role == HOOK_REDUCER && m->vm_id > m->reducers)
		return hook_fail(e, "vm-id %u is above the %u reducers", m->vm_id,
				 m->reducers);
	if (value_geometry(m->size, m->reducers, &why))
		return hook_fail(e, "size %" PRIu64 " for %u reducers: %s",
				 m->size, m->reducers, why);
	if (slash == m->socket || slash == strchr(m->socket + 1, '/'))
		return hook_fail(e, "socket %s: the socket needs a directory of its own, two levels below / at least (/run/sivshm/)",
				 m->socket);
	if (m->role == HOOK_REDUCER && (!m->unlink || m->dir[0]))
		return hook_fail(e, "unlink and dir are the mapper's to set");
	if (!m->unlink && !m->dir[0])
		return hook_fail(e, "unlink off needs dir");
	return 0;
}

/* The fields of our element @top into @m. */
static int read_fields(const xmlNode *top, struct hook_meta *m,
		       struct hook_err *e)
{
	char text[HOOK_FIELD_MAX + 1];
	int seen[F_COUNT] = { 0 };

	memset(m, 0, sizeof(*m));
	m->unlink = 1;
	if (top->properties)
		return hook_fail(e, "<%s:%s>: attributes are not allowed",
				 HOOK_NS_PREFIX, HOOK_ELEMENT);
	for (const xmlNode *c = top->children; c; c = c->next) {
		enum field f;

		if (c->type == XML_TEXT_NODE && is_blank((const char *)c->content))
			continue;
		if (c->type == XML_COMMENT_NODE)
			continue;
		if (c->type != XML_ELEMENT_NODE)
			return hook_fail(e, "<%s:%s>: only elements are allowed inside",
					 HOOK_NS_PREFIX, HOOK_ELEMENT);
		if (!in_ns(c, HOOK_NS))
			return hook_fail(e, "<%s:%s>: <%s> is in another namespace",
					 HOOK_NS_PREFIX, HOOK_ELEMENT, c->name);
		for (f = 0; f < F_COUNT; f++) {
			if (!strcmp((const char *)c->name, field_name[f]))
				break;
		}
		if (f == F_COUNT)
			return hook_fail(e, "<%s:%s>: unknown element <%s>",
					 HOOK_NS_PREFIX, HOOK_ELEMENT, c->name);
		if (seen[f]++)
			return hook_fail(e, "<%s> is given twice", field_name[f]);
		if (leaf_text(c, field_name[f], text, e) ||
		    set_field(m, f, text, e))
			return -1;
	}
	for (int f = 0; f < REQUIRED_FIELDS; f++) {
		if (!seen[f])
			return hook_fail(e, "<%s:%s> has no <%s>", HOOK_NS_PREFIX,
					 HOOK_ELEMENT, field_name[f]);
	}
	if (m->role == HOOK_REDUCER && (seen[F_UNLINK] || seen[F_DIR]))
		return hook_fail(e, "unlink and dir are the mapper's to set");
	return meta_check(m, e);
}

/* Our element in <metadata>: NULL if none, @e set if more than one. */
static const xmlNode *find_meta(const xmlNode *root, struct hook_err *e,
				int *err)
{
	const xmlNode *found = NULL;

	*err = 0;
	for (const xmlNode *md = root->children; md; md = md->next) {
		if (!is_elem(md, NULL, "metadata"))
			continue;
		for (const xmlNode *c = md->children; c; c = c->next) {
			if (c->type != XML_ELEMENT_NODE || !in_ns(c, HOOK_NS))
				continue;
			if (strcmp((const char *)c->name, HOOK_ELEMENT)) {
				*err = hook_fail(e, "<metadata>: unknown element <%s> in namespace %s",
						 c->name, HOOK_NS);
				return NULL;
			}
			if (found) {
				*err = hook_fail(e, "<metadata> has more than one <%s:%s>",
						 HOOK_NS_PREFIX, HOOK_ELEMENT);
				return NULL;
			}
			found = c;
		}
	}
	return found;
}

/* The value after a -device: ours if it names the sivshm driver. */
static int device_value(const char *v, struct hook_domain *dom, int *found,
			struct hook_err *e)
{
	if (v[0] == '{')
		return strstr(v, "sivshm") ?
		       hook_fail(e, "-device in JSON form: write sivshm,key=value,...") : 0;
	if (!devarg_is_sivshm(v))
		return 0;
	if ((*found)++)
		return hook_fail(e, "more than one -device sivshm: the hook handles one per domain");
	return devarg_parse(v, &dom->dev, e);
}

/* The options whose value the hook reads. */
enum opt {
	OPT_NONE,
	OPT_DEVICE,
	OPT_OVERRIDE,		/* -global, -set: they could change our device */
};

static enum opt opt_of(const char *v)
{
	if (v[0] == '-' && v[1] == '-')
		v++;
	if (!strcmp(v, "-device"))
		return OPT_DEVICE;
	if (!strcmp(v, "-global") || !strcmp(v, "-set"))
		return OPT_OVERRIDE;
	return OPT_NONE;
}

/* An -global or -set value must leave the device as its string says. */
static int override_value(const char *v, struct hook_err *e)
{
	if (!strncmp(v, "sivshm.", 7) || !strncmp(v, "device.", 7))
		return hook_fail(e, "-global or -set %.40s could change the device behind the hook's back: put its properties in -device sivshm",
				 v);
	return 0;
}

/* The one -device sivshm,... of <qemu:commandline>, parsed into @dom. */
static int read_device(const xmlNode *root, struct hook_domain *dom,
		       struct hook_err *e)
{
	enum opt after = OPT_NONE;
	int found = 0;

	for (const xmlNode *cl = root->children; cl; cl = cl->next) {
		if (!is_elem(cl, HOOK_QEMU_NS, "commandline"))
			continue;
		for (const xmlNode *a = cl->children; a; a = a->next) {
			const char *v;
			xmlChar *value;
			int err = 0;

			if (!is_elem(a, HOOK_QEMU_NS, "arg"))
				continue;
			value = xmlGetNoNsProp(a, (const xmlChar *)"value");
			v = value ? (const char *)value : "";
			if (after == OPT_DEVICE)
				err = device_value(v, dom, &found, e);
			else if (after == OPT_OVERRIDE)
				err = override_value(v, e);
			after = opt_of(v);
			xmlFree(value);
			if (err)
				return -1;
		}
	}
	if (!found)
		return hook_fail(e, "the metadata names service %s but <qemu:commandline> has no -device sivshm",
				 dom->meta.service);
	return 0;
}

/* The text of the root's child <@name>, bounded. */
static int root_text(const xmlNode *root, const char *name, char *out,
		     struct hook_err *e)
{
	const xmlNode *found = NULL;

	for (const xmlNode *c = root->children; c; c = c->next) {
		if (!is_elem(c, NULL, name))
			continue;
		if (found)
			return hook_fail(e, "<domain> has more than one <%s>", name);
		found = c;
	}
	if (!found)
		return hook_fail(e, "<domain> has no <%s>", name);
	return leaf_text(found, name, out, e);
}

static int read_identity(const xmlNode *root, struct hook_domain *dom,
			 struct hook_err *e)
{
	char text[HOOK_FIELD_MAX + 1];
	const char *why;

	if (root_text(root, "name", text, e))
		return -1;
	if (strlen(text) > HOOK_NAME_MAX)
		return hook_fail(e, "<name> is longer than %d bytes", HOOK_NAME_MAX);
	for (const char *p = text; *p; p++) {
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return hook_fail(e, "<name> has a control character");
	}
	strcpy(dom->name, text);
	if (root_text(root, "uuid", text, e))
		return -1;
	if (value_uuid(text, dom->uuid, &why))
		return hook_fail(e, "<uuid> %s: %s", text, why);
	return 0;
}

static int read_domain(const xmlDoc *doc, struct hook_domain *dom,
		       struct hook_err *e)
{
	const xmlNode *root = xmlDocGetRootElement(doc);
	const xmlNode *top;
	int err;

	if (doc->intSubset || doc->extSubset)
		return hook_fail(e, "the domain XML has a DTD (libvirt never writes one)");
	if (!root || !is_elem(root, NULL, "domain"))
		return hook_fail(e, "the document is not a <domain>");
	top = find_meta(root, e, &err);
	if (err)
		return -1;
	if (!top)
		return 0;
	if (read_fields(top, &dom->meta, e) || read_identity(root, dom, e) ||
	    read_device(root, dom, e) || devarg_agree(&dom->meta, &dom->dev, e))
		return -1;
	return 1;
}

/* Swallow libxml2's own error output: the caller reports one line. */
static void quiet(void *ctx, const char *fmt, ...)
{
}

int meta_parse(const char *buf, size_t len, struct hook_domain *dom,
	       struct hook_err *e)
{
	xmlParserCtxtPtr ctxt;
	const xmlError *xe;
	xmlDocPtr doc;
	int ret;

	memset(dom, 0, sizeof(*dom));
	if (len > HOOK_XML_MAX)
		return hook_fail(e, "the domain XML is over %d bytes", HOOK_XML_MAX);
	/* Refused before parsing, so no entity is ever declared. */
	if (memmem(buf, len, "<!DOCTYPE", 9))
		return hook_fail(e, "the domain XML has a DTD (libvirt never writes one)");
	xmlSetGenericErrorFunc(NULL, quiet);
	ctxt = xmlNewParserCtxt();
	if (!ctxt)
		return hook_fail(e, "out of memory");
	doc = xmlCtxtReadMemory(ctxt, buf, (int)len, "domain.xml", NULL,
				XML_PARSE_NONET | XML_PARSE_NOERROR |
				XML_PARSE_NOWARNING);
	if (!doc) {
		xe = xmlCtxtGetLastError(ctxt);
		if (xe && xe->message) {
			ret = hook_fail(e, "malformed domain XML, line %d: %s",
					xe->line, xe->message);
			e->msg[strcspn(e->msg, "\n")] = '\0';
		} else {
			ret = hook_fail(e, "malformed domain XML");
		}
		xmlFreeParserCtxt(ctxt);
		return ret;
	}
	ret = read_domain(doc, dom, e);
	xmlFreeDoc(doc);
	xmlFreeParserCtxt(ctxt);
	return ret;
}
